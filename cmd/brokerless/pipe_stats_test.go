package main

import (
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport/pipe"
)

// TestPipeStatsCountEndMarkers: the exit line names the end markers
// written, so that forwarded messages and markers add up to what TO
// accepted; a pipe that wrote none says nothing of them.
func TestPipeStatsCountEndMarkers(t *testing.T) {
	var b strings.Builder
	writePipeStats(&b, pipe.Stats{Forwarded: 10, Markers: 1, EndMarkers: 2, Accepted: 13})
	if !strings.Contains(b.String(), "1 gap markers (0 for what the source no longer held), 2 end markers (sessions their publishers closed), skipped 0") {
		t.Errorf("exit line %q does not count the end markers", b.String())
	}
	b.Reset()
	writePipeStats(&b, pipe.Stats{Forwarded: 10, Accepted: 10})
	if strings.Contains(b.String(), "end markers") {
		t.Errorf("exit line %q names end markers none of which was written", b.String())
	}
}
