package pipe

import (
	"math"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestResumeAtLastPosition: a destination record (which anyone may
// write) whose origin is the last position a stream can have, or a gap
// marker up to it, makes the pipe drop every event of that stream: it
// writes nothing for them, not a resume gap marker from a position past
// the last (wrapped to 0).
func TestResumeAtLastPosition(t *testing.T) {
	for _, rec := range []transport.Message{
		{Headers: transport.AppendOrigin(nil, transport.Origin{Stream: feedA, Seq: math.MaxUint64, Time: t0})},
		transport.GapMarker(transport.Gap{Stream: feedA, From: 7, To: math.MaxUint64, Reason: transport.GapSourceDown}, t0),
	} {
		c := newCore(t, 0)
		if _, err := c.Resume(tailOf(part0, feedA, 1, 0, rec)); err != nil {
			t.Fatal(err)
		}
		if _, ws := feed(t, c, startEv(feedA, 5), msg(feedA, 5), gapEv(feedA, 6, 9, transport.GapTimeout), msg(feedA, 10)); len(ws) != 0 {
			t.Errorf("wrote %+v, want nothing", ws)
		}
	}
}
