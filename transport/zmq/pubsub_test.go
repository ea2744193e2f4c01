package zmq

import (
	"fmt"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

func TestPubSubTopics(t *testing.T) {
	for _, pack := range []bool{false, true} {
		t.Run(fmt.Sprintf("pack=%v", pack), func(t *testing.T) {
			ctx := testCtx(t)
			pub, ep := bound(t, Config{Pack: pack})
			sub := connected(t, ep, Config{Subscribe: []string{"a."}})
			if err := pub.WaitSubscribers(ctx, "a.x", 1); err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				topic := "a.x"
				if i%2 == 1 {
					topic = "b.y"
				}
				if err := pub.Publish(ctx, transport.Message{Topic: topic, Key: []byte("k"), Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := pub.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			var stream transport.StreamID
			for i := 0; i < 100; i += 2 {
				m := nextMessage(t, sub)
				if m.Topic != "a.x" || string(m.Payload) != fmt.Sprint(i) || string(m.Key) != "k" {
					t.Fatalf("got %q %q %q, want a.x %d", m.Topic, m.Payload, m.Key, i)
				}
				if stream.IsZero() {
					stream = m.Stream
				}
				if m.Stream != stream || m.Seq != uint64(i/2+1) {
					t.Fatalf("message %d: stream %v seq %d, want %v seq %d", i, m.Stream, m.Seq, stream, i/2+1)
				}
			}
		})
	}
}
