package archive

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

func endMarker(stream transport.StreamID, last uint64) transport.Message {
	return transport.EndMarker(transport.StreamEnd{Stream: stream, LastSeq: last, Reason: transport.EndClosed}, time.Unix(0, int64(last)))
}

// TestUnwrapEndMarker: an end marker comes back as its session's
// StreamEnd — not a message, not a gap — counted in Stats.Ends, through
// Next and through a log that hands records one at a time (Append's
// ReadEach); its position is the session's last, so that Last returns
// it and a Seek to the session's last message lands on that message.
// A Seek one past that lands on the end marker, not after it: a replay
// for the tail of a session whose every message it had (its subscriber
// ended it for silence, not hearing the close) starts there, and must
// read that the publisher closed it.
func TestUnwrapEndMarker(t *testing.T) {
	a, b := sess(1, 7), sess(1, 8)
	fill := func(log *fakeLog) {
		for seq := uint64(1); seq <= 3; seq++ {
			log.add(part0, recorded(a, seq, payload(a, seq)))
		}
		log.add(part0, endMarker(a, 3))
		log.add(part0, endMarker(sess(2, 7), 9)) // another feed's
		log.add(part0, recorded(b, 1, payload(b, 1)))
	}
	wantEnd := transport.StreamEnd{Stream: a, LastSeq: 3, Reason: transport.EndClosed}
	plain := newFakeLog(100)
	fill(plain)
	each := &eachLog{fakeLog: newFakeLog(100)}
	fill(each.fakeLog)
	for name, log := range map[string]transport.Log{"Read": plain, "ReadEach": each} {
		r, evs := nextFromEarliest(t, log)
		if len(evs) != 5 || evs[3].Kind != transport.EventStreamEnd || evs[3].End != wantEnd ||
			evs[2].Kind != transport.EventMessage || evs[2].Message.Seq != 3 || evs[4].Kind != transport.EventMessage || evs[4].Message.Stream != b {
			t.Fatalf("%s: events %+v: want messages 1-3 of %v, its end %+v, message 1 of %v", name, evs, a, wantEnd, b)
		}
		if s := r.Stats(); s.Ends != 1 || s.Messages != 4 || s.Gaps != 0 || s.OtherStreams != 1 || s.Malformed != 0 {
			t.Errorf("%s: stats %+v", name, s)
		}
		// The log's last record is of a later session: the search
		// bisects.
		r = NewReader(log, 1)
		if err := r.Seek(context.Background(), At(Pos{7, 4})); err != nil {
			t.Fatal(err)
		}
		if evs, err := r.Next(context.Background()); err != nil || len(evs) != 2 || evs[0].Kind != transport.EventStreamEnd || evs[0].End != wantEnd {
			t.Errorf("%s: from one past the session's last: %+v %v, want its end first", name, evs, err)
		}
	}

	// The end marker is the feed's last record: Last returns its
	// position, the session's last.
	log := newFakeLog(100)
	for seq := uint64(1); seq <= 50; seq++ {
		log.add(part0, recorded(a, seq, payload(a, seq)))
	}
	log.add(part0, endMarker(a, 50))
	r := NewReader(log, 1)
	ctx := context.Background()
	if p, ok, err := r.Last(ctx); err != nil || !ok || p != (Pos{7, 50}) {
		t.Fatalf("Last %v %v %v, want %v", p, ok, err, Pos{7, 50})
	}
	for _, seq := range []uint64{1, 20, 49, 50} {
		if err := r.Seek(ctx, At(Pos{7, seq})); err != nil {
			t.Fatal(err)
		}
		if r.pos != seq-1 {
			t.Errorf("seq %d at position %d, want %d", seq, r.pos, seq-1)
		}
	}
	if err := r.Seek(ctx, At(Pos{7, 51})); err != nil || r.pos != 50 {
		t.Errorf("one past the session's last: position %d %v, want 50 (its end marker)", r.pos, err)
	}
	if err := r.Seek(ctx, At(Pos{7, 52})); err != nil || r.pos != 51 {
		t.Errorf("past the end: position %d %v, want 51 (the log's end)", r.pos, err)
	}
}
