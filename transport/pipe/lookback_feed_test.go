package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestAddPageFeedOfALogNotInterleaved: a pipe from a consumer group
// whose source log holds a feed's gap markers (a recorder's archive,
// piped on) finds the feed's stream in the destination's tail and
// again, older, in a page read further back for a partition the tail
// does not reach. The feed's positions there are in order, not
// interleaved: it stays resumed, and a marker it holds is not written
// again.
func TestAddPageFeedOfALogNotInterleaved(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	newer := transport.GapMarker(transport.Gap{Stream: feedA, From: 100, To: 110, Reason: transport.GapTimeout}, t0)
	if _, err := c.ResumeAcknowledged(shifted(5000, tailOf(dst, part0, 1, DefaultTailRecords-1, newer))); err != nil {
		t.Fatal(err)
	}
	d, before, ok := c.LookFor(srcLog, 7, DefaultMaxLookback)
	if !ok || d != dst {
		t.Fatalf("LookFor = %v %d %v", d, before, ok)
	}
	older := transport.GapMarker(transport.Gap{Stream: feedA, From: 50, To: 60, Reason: transport.GapTimeout}, t0)
	c.AddPage(dst, shifted(before-LookbackPage, tailOf(dst, part1, 1, LookbackPage-1, older)), LookbackPage)
	if st := c.Stats(); st.Interleaved != 0 {
		t.Errorf("Interleaved = %d, want 0", st.Interleaved)
	}
	if _, ws := feed(t, c, gapEv(feedA, 100, 110, transport.GapTimeout)); len(ws) != 0 {
		t.Errorf("wrote %+v again, want nothing", ws)
	}
}
