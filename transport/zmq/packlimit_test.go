package zmq

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestPackFitsMaxMessageBytes: a publisher packing with a
// MaxMessageBytes below PackBytes never sends a pack larger than
// MaxMessageBytes, which a subscriber of the same Config refuses by
// failing the connection (it used to pack up to PackBytes whatever
// MaxMessageBytes said, and every pack beyond it cost the connection
// and what was in flight).
func TestPackFitsMaxMessageBytes(t *testing.T) {
	cfg := Config{Pack: true, MaxMessageBytes: 2048}
	pub, ep := bound(t, cfg)
	sub := connected(t, ep, cfg)
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	payload := bytes.Repeat([]byte("p"), 100)
	for range n {
		if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < n; {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := sub.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d messages: %v (subscriber %+v)", got, err, sub.Stats())
		}
		switch ev.Kind {
		case transport.EventMessage:
			got++
		case transport.EventGap:
			t.Fatalf("gap %v after %d messages (subscriber TooLarge %d)", ev.Gap, got, sub.Stats().TooLarge)
		}
	}
	if st := sub.Stats(); st.TooLarge != 0 {
		t.Errorf("subscriber TooLarge %d", st.TooLarge)
	}
}
