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

// TestResumeGapMarkerOnce: a multicast source's Gap (a repair that
// never came) is written as a marker once: the pipe restarted after it
// gets the publisher's window again (join=earliest), where the gap is
// either reported again or, repaired this time, delivered as messages;
// either way the destination holds the marker already, and nothing of
// it is written again.
func TestResumeGapMarkerOnce(t *testing.T) {
	first := newCore(t, 0)
	var dest []transport.Message
	for _, ev := range []*transport.Event{startEv(feedA, 1), msg(feedA, 1), gapEv(feedA, 2, 4, transport.GapTimeout), msg(feedA, 5)} {
		for _, w := range first.Event(ev, clock) {
			m := w.Message
			m.Headers = []transport.Header{{Key: w.Message.Headers[len(w.Message.Headers)-1].Key, Value: append([]byte(nil), w.Message.Headers[len(w.Message.Headers)-1].Value...)}}
			m.Stream, m.Seq = part0, uint64(len(dest))
			dest = append(dest, m)
		}
	}
	if len(dest) != 3 {
		t.Fatalf("first run wrote %d records", len(dest))
	}
	for name, replay := range map[string][]*transport.Event{
		"reported again": {startEv(feedA, 1), msg(feedA, 1), gapEv(feedA, 2, 4, transport.GapTimeout), msg(feedA, 5), msg(feedA, 6)},
		"repaired":       {startEv(feedA, 1), msg(feedA, 1), msg(feedA, 2), msg(feedA, 3), msg(feedA, 4), msg(feedA, 5), msg(feedA, 6)},
	} {
		c := newCore(t, 0)
		if _, err := c.Resume(dest); err != nil {
			t.Fatal(err)
		}
		if _, ws := feed(t, c, replay...); len(ws) != 1 || ws[0].marker || ws[0].origin.Seq != 6 {
			t.Errorf("%s: restarted, wrote %+v; want 6 alone", name, ws)
		}
	}
}
