package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestPipeOfAPipe: a pipe B→C of what a pipe A→B wrote. A record of B
// keeps A's origin header, and gets B's after it: the origin read back
// (the last header) is B's, A's stays in the headers as it was. A gap
// marker of B, which B's subscriber delivers as the Gap of A's stream
// it stands for, is written to C as that gap. A restarted B→C resumes
// from C: B's records and A's gap that C holds are dropped, the next
// is written.
func TestPipeOfAPipe(t *testing.T) {
	logB := transport.StreamID{Topic: "B", Partition: 0}
	ab := newCore(t, 0)
	in := &transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: feedA, Seq: 5, Time: t0, Topic: "AAPL", Key: []byte("k"),
		Headers: []transport.Header{{Key: "h", Value: []byte("v")}}, Payload: []byte("p"),
	}}
	ws := ab.Event(in, clock)
	if len(ws) != 1 {
		t.Fatalf("A→B wrote %d", len(ws))
	}
	// B holds it at offset 0, then a gap marker of A at offset 1.
	b0 := ws[0].Message
	b0.Stream, b0.Seq, b0.Topic = logB, 0, "B"
	b0.Headers = append([]transport.Header(nil), b0.Headers...)

	bc := newCore(t, 0)
	var c []transport.Message
	for _, ev := range []*transport.Event{
		{Kind: transport.EventMessage, Message: b0},
		gapEv(feedA, 6, 9, transport.GapTimeout), // offset 1 of B, delivered as A's gap
		msg(logB, 2),
	} {
		for _, w := range bc.Event(ev, clock) {
			m := w.Message // valid until the next Event: copied
			m.Headers = nil
			for _, h := range w.Message.Headers {
				m.Headers = append(m.Headers, transport.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
			}
			c = append(c, m)
		}
	}
	if len(c) != 3 {
		t.Fatalf("B→C wrote %d records, want 3", len(c))
	}
	hs := c[0].Headers
	if len(hs) != 3 || hs[0].Key != "h" || hs[1].Key != transport.HeaderOrigin || hs[2].Key != transport.HeaderOrigin {
		t.Fatalf("C's record has headers %+v, want h, A's origin, B's origin", hs)
	}
	if o, _, err := transport.ParseOrigin(hs[:2]); err != nil || o.Stream != feedA || o.Seq != 5 || o.Topic != "AAPL" {
		t.Errorf("A's origin %+v, %v", o, err)
	}
	if o, _, err := transport.ParseOrigin(hs); err != nil || o.Stream != logB || o.Seq != 0 || o.Topic != "B" {
		t.Errorf("the origin read back %+v, %v; want B's offset 0", o, err)
	}
	if g, ok, err := transport.ParseGapMarker(c[1]); !ok || err != nil || g.Stream != feedA || g.From != 6 || g.To != 9 {
		t.Errorf("C's second record: gap %+v %v %v, want A's 6-9", g, ok, err)
	}

	// B→C restarted, C holding the first two records: B replays from 0.
	re := newCore(t, 0)
	tail := c[:2]
	for i := range tail {
		tail[i].Stream, tail[i].Seq = transport.StreamID{Topic: "C"}, uint64(i)
	}
	if n, err := re.Resume(tail); n != 2 || err != nil {
		t.Fatalf("resume: %d streams, %v", n, err)
	}
	_, got := feed(t, re, startEv(logB, 0), &transport.Event{Kind: transport.EventMessage, Message: b0},
		gapEv(feedA, 6, 9, transport.GapTimeout), msg(logB, 2))
	if len(got) != 1 || got[0].marker || got[0].origin.Stream != logB || got[0].origin.Seq != 2 {
		t.Errorf("restarted, wrote %+v; want B's offset 2 alone", got)
	}
}
