package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestRereadSinceKeepsAnInterleavedStreamUnresumed: two pipes, of two
// clusters whose topics share a name, write srcLog into one
// destination stream: this one 1..5, the other 1..10 after it. Resume
// finds srcLog going backwards, and does not resume it
// (Stats.Interleaved). The other writes 11..13; a stream start reads
// only those and one record before, all in order. srcLog must stay
// unresumed, as a full Reread of the destination (which sees it go
// backwards) leaves it: this pipe's own 6..13, which the destination
// does not hold, are written, not dropped and acknowledged.
func TestRereadSinceKeepsAnInterleavedStreamUnresumed(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	tail := append(tailOf(dst, srcLog, 1, 5), shifted(5, tailOf(dst, srcLog, 1, 10))...)
	if _, err := c.ResumeAcknowledged(tail); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Interleaved != 1 {
		t.Fatalf("Interleaved = %d, want 1", s.Interleaved)
	}
	n := c.Unread([]transport.Message{{Stream: dst, Seq: 17}})
	if n != 4 {
		t.Fatalf("Unread = %d, want 4", n)
	}
	if ok, err := c.RereadSince(part1, shifted(14, tailOf(dst, srcLog, 10, 13)), n); !ok || err != nil {
		t.Fatalf("RereadSince = %v, %v: want taken", ok, err)
	}
	feed(t, c, startEv(part1, 0))
	var evs []*transport.Event
	for pos := uint64(6); pos <= 13; pos++ {
		evs = append(evs, msg(srcLog, pos))
	}
	if _, ws := feed(t, c, evs...); len(ws) != 8 {
		t.Errorf("wrote %d of srcLog 6..13, which the destination holds of another source only: want all 8", len(ws))
	}
}
