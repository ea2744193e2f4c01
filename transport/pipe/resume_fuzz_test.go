package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// FuzzResume: a destination record (anyone may write one) with any
// brokerless.origin value, after records the pipe wrote of feedA up to
// 100. Resume never panics; a value that does not decode is ignored,
// and counted (Stats.MalformedTail): the pipe still drops 100 and
// writes 101. Events of the stream the value names, if it decodes,
// never panic either.
func FuzzResume(f *testing.F) {
	f.Add(transport.AppendOriginValue(nil, transport.Origin{Stream: feedA, Seq: 7, Time: t0}, nil), uint64(5))
	f.Add(transport.AppendOriginValue(nil, transport.Origin{Stream: part1, Seq: 1 << 63, Time: t0, Topic: "x"}, nil), uint64(1<<63+1))
	f.Add(transport.AppendOriginValue(nil, transport.Origin{Time: t0}, &transport.Gap{Stream: feedB, From: 3, To: 1<<64 - 1, Reason: transport.GapTimeout}), uint64(2))
	f.Add([]byte{1, 3, 0}, uint64(0))
	f.Add([]byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, v []byte, seq uint64) {
		rec := transport.Message{Headers: []transport.Header{{Key: transport.HeaderOrigin, Value: v}}}
		var ov transport.OriginValue
		bad := ov.Decode(v) != nil
		c := newCore(t, 0)
		if _, err := c.Resume(tailOf(part0, feedA, 99, 100, rec)); err != nil {
			t.Fatal(err) // every record is in one destination stream: no split
		}
		if bad {
			if s := c.Stats(); s.MalformedTail != 1 {
				t.Errorf("a malformed value counted %d times", s.MalformedTail)
			}
			if _, ws := feed(t, c, msg(feedA, 100), msg(feedA, 101)); len(ws) != 1 || ws[0].marker || ws[0].origin.Seq != 101 {
				t.Errorf("after a malformed record, wrote %+v; want 101 alone", ws)
			}
			return
		}
		eventsAround(c, ov.Stream(), seq)
	})
}

// FuzzLookBack: the same record met further back in the destination
// than the tail (Core.AddPage), before records of another log stream
// the pipe wrote. AddPage never panics; a value that does not decode is
// ignored and counted, and the other stream is still found.
func FuzzLookBack(f *testing.F) {
	f.Add(transport.AppendOriginValue(nil, transport.Origin{Stream: srcLog, Seq: 7, Time: t0, Topic: "src"}, nil), uint64(5))
	f.Add(transport.AppendOriginValue(nil, transport.Origin{Time: t0}, &transport.Gap{Stream: part1, From: 3, To: 1<<64 - 1, Reason: transport.GapTimeout}), uint64(2))
	f.Add([]byte{1, 3, 0}, uint64(0))
	// A value that names the other stream, past its records after it.
	f.Add(transport.AppendOriginValue(nil, transport.Origin{Stream: lookedFor, Seq: 1000, Time: t0, Topic: "other"}, nil), uint64(5))
	f.Fuzz(func(t *testing.T, v []byte, seq uint64) {
		dst := transport.StreamID{Topic: "dest"}
		other := lookedFor
		var ov transport.OriginValue
		bad := ov.Decode(v) != nil
		c := newCore(t, 0)
		if _, err := c.ResumeAcknowledged(shifted(1000, tailOf(dst, part0, 1, DefaultTailRecords))); err != nil {
			t.Fatal(err)
		}
		rec := transport.Message{Stream: dst, Seq: 500, Headers: []transport.Header{{Key: transport.HeaderOrigin, Value: v}}}
		page := append([]transport.Message{rec}, shifted(501, tailOf(dst, other, 40, 50))...)
		if _, _, ok := c.LookFor(other, 0, DefaultMaxLookback); !ok {
			t.Fatal("no page asked for a log stream beyond a full tail")
		}
		c.AddPage(dst, page, LookbackPage)
		if !bad && ov.Stream() == other {
			// The record is the other stream's too: its position
			// and the order of the page's decide (not fuzzed here).
			return
		}
		if _, ws := feed(t, c, msg(other, 50), msg(other, 51)); len(ws) != 1 || ws[0].origin.Seq != 51 {
			t.Errorf("wrote %+v; want 51 alone", ws)
		}
		if bad {
			if s := c.Stats(); s.MalformedTail != 1 {
				t.Errorf("a malformed value counted %d times", s.MalformedTail)
			}
			return
		}
		eventsAround(c, ov.Stream(), seq)
	})
}

// lookedFor is the log stream FuzzLookBack looks for further back.
var lookedFor = transport.StreamID{Topic: "other", Partition: 3}

// eventsAround gives c a start, a message, a gap and a message of
// stream s at and after seq, while it has room: none may panic.
func eventsAround(c *Core, s transport.StreamID, seq uint64) {
	for _, ev := range []*transport.Event{startEv(s, seq), msg(s, seq), gapEv(s, seq, seq+min(^seq, 3), transport.GapUnrecoverable), msg(s, seq+min(^seq, 4))} {
		if c.Full() {
			return
		}
		c.Event(ev, clock)
	}
}
