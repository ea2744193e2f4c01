package main

import (
	"strings"
	"testing"
	"time"

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

// TestPipeStatsNameTheRereadsAndWhatWasForgotten: the exit line and
// the interval line name the reads of TO again that failed
// (Stats.RereadsFailed), the runs of held positions forgotten
// (HeldRunsDropped) and the ended feed sessions forgotten
// (EndedForgotten); the exit line says nothing of those that are 0.
func TestPipeStatsNameTheRereadsAndWhatWasForgotten(t *testing.T) {
	s := pipe.Stats{Forwarded: 10, Accepted: 10, RereadsFailed: 3, HeldRunsDropped: 4, EndedForgotten: 5}
	var b strings.Builder
	writePipeStats(&b, s)
	for _, want := range []string{"3 reads of TO's last records at a partition's start failed", "4 runs of positions TO held forgotten", "5 ended feed sessions forgotten"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("exit lines %q do not say %q", b.String(), want)
		}
	}
	line := pipeStatsLine(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), s)
	if !strings.HasSuffix(line, " rereads-failed=3 held-runs-dropped=4 ended-forgotten=5\n") || !strings.HasPrefix(line, "03:04:05 forwarded=10 ") {
		t.Errorf("interval line %q does not end with the three counters", line)
	}
	b.Reset()
	writePipeStats(&b, pipe.Stats{Forwarded: 10, Accepted: 10})
	for _, not := range []string{"reads of TO", "runs of positions", "sessions forgotten"} {
		if strings.Contains(b.String(), not) {
			t.Errorf("exit lines %q name %q, which is 0", b.String(), not)
		}
	}
}
