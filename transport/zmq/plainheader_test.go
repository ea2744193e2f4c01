package zmq

import (
	"bytes"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestPlainPayloadLikeHeader: a publisher without header frames whose
// second frame happens to begin as a header frame does (3 bytes, about
// one binary payload in 16 million) has that message delivered, as
// the plain message it is, once its connection has shown it sends
// plain messages: it used to be dropped as a bad header, and as plain
// messages are numbered on arrival, no gap said so.
func TestPlainPayloadLikeHeader(t *testing.T) {
	o := newOffline()
	looksLike := append([]byte{magic0, magic1, headerVersion, 9}, bytes.Repeat([]byte{0xEE}, 40)...)
	for _, p := range [][]byte{[]byte("first"), looksLike, []byte("third")} {
		f := [][]byte{[]byte("t"), p}
		o.q.put(inItem{frames: f, size: memCost(f), conn: o.conn}, nil)
	}
	ctx := testCtx(t)
	var got [][]byte
	for len(got) < 3 {
		ev, err := o.Receive(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v (BadHeaders %d)", len(got), err, o.badHeaders.Load())
		}
		switch ev.Kind {
		case transport.EventMessage:
			if ev.Message.Seq != uint64(len(got)+1) {
				t.Errorf("message %q has seq %d, want %d", ev.Message.Payload, ev.Message.Seq, len(got)+1)
			}
			got = append(got, ev.Message.Payload)
		case transport.EventGap:
			t.Errorf("gap %+v", ev.Gap)
		}
	}
	if !bytes.Equal(got[1], looksLike) || o.badHeaders.Load() != 0 {
		t.Errorf("second message %x, BadHeaders %d", got[1], o.badHeaders.Load())
	}
}
