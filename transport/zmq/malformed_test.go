package zmq

import (
	"fmt"
	"slices"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// offline is a subscriber without sockets: the test queues what a
// publisher's connection would have, with push.
type offline struct {
	*Subscriber
	conn *inConn
}

func newOffline() offline {
	s := &Subscriber{q: newInq(100, 1<<20), closed: make(chan struct{}), tr: newTracker(16, 1<<20), filter: newPrefixFilter([]string{""})}
	return offline{s, &inConn{closed: make(chan struct{})}}
}

// push queues a ZMTP message of topic "t" with header h; body is its
// third frame (none for a heartbeat or an end).
func (o offline) push(h header, body []byte) {
	f := [][]byte{[]byte("t"), appendHeader(nil, &h)}
	if h.kind != kindHeartbeat && h.kind != kindEnd {
		f = append(f, body)
	}
	o.q.put(inItem{frames: f, size: memCost(f), conn: o.conn}, nil)
}

// untilEnd receives until a stream end, and formats what came.
func (o offline) untilEnd(t *testing.T) []string {
	t.Helper()
	ctx := testCtx(t)
	var out []string
	for {
		ev, err := o.Receive(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		switch ev.Kind {
		case transport.EventStreamStart:
			out = append(out, fmt.Sprintf("start at %d", ev.Start.FirstSeq))
		case transport.EventMessage:
			out = append(out, fmt.Sprintf("%d %s", ev.Message.Seq, ev.Message.Payload))
		case transport.EventGap:
			out = append(out, fmt.Sprintf("gap %d..%d", ev.Gap.From, ev.Gap.To))
		case transport.EventStreamEnd:
			return append(out, fmt.Sprintf("end at %d", ev.End.LastSeq))
		}
	}
}

// TestMalformedHeaderLeavesStreamAlone: a header whose pack count its
// body does not hold, or whose sequence number is 0, is dropped and
// counted before its stream sees it, and the stream goes on: what the
// publisher really sent next is delivered, and only what is really
// missing is reported lost.
func TestMalformedHeaderLeavesStreamAlone(t *testing.T) {
	msg := func(seq uint64) header { return header{kind: kindMessage, feed: 1, session: 9, seq: seq} }
	mark := func(k kind, seq uint64) header { return header{kind: k, feed: 1, session: 9, seq: seq} }
	packed := func(seq, count uint64) header {
		return header{kind: kindPacked, feed: 1, session: 9, seq: seq, count: count}
	}
	entries := func(n int) []byte {
		var b []byte
		for i := range n {
			b = appendPackEntry(b, &transport.Message{Payload: fmt.Appendf(nil, "p%d", i)}, 0, 0)
		}
		return b
	}
	type frame struct {
		h    header
		body string
	}
	for _, tc := range []struct {
		name              string
		frames            []frame
		want              []string
		badHeaders, packs uint64
	}{
		{"pack count beyond its body",
			[]frame{{msg(1), "one"}, {packed(2, 1<<40), string(entries(1))}, {msg(2), "two"}, {mark(kindEnd, 3), ""}},
			[]string{"start at 1", "1 one", "2 two", "end at 2"}, 0, 1},
		{"pack body short of its count",
			[]frame{{msg(1), "one"}, {packed(2, 3), string(entries(2))}, {msg(5), "five"}, {mark(kindEnd, 6), ""}},
			[]string{"start at 1", "1 one", "gap 2..4", "5 five", "end at 5"}, 0, 1},
		{"heartbeat seq 0",
			[]frame{{msg(1), "one"}, {mark(kindHeartbeat, 0), ""}, {msg(2), "two"}, {mark(kindEnd, 3), ""}},
			[]string{"start at 1", "1 one", "2 two", "end at 2"}, 1, 0},
		{"first message seq 0",
			[]frame{{msg(0), "zero"}, {msg(1), "one"}, {mark(kindEnd, 2), ""}},
			[]string{"start at 1", "1 one", "end at 1"}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOffline()
			for _, f := range tc.frames {
				o.push(f.h, []byte(f.body))
			}
			if got := o.untilEnd(t); !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
			if b, p := o.badHeaders.Load(), o.badPacks.Load(); b != tc.badHeaders || p != tc.packs {
				t.Errorf("BadHeaders %d, BadPacks %d; want %d, %d", b, p, tc.badHeaders, tc.packs)
			}
		})
	}
}
