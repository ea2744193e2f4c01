package zmq

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/go-zeromq/zmq4"

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

// TestSubscriptionToggleCostsLittle: a subscriber holding 1023 long
// prefixes that subscribes and unsubscribes one more, again and again,
// makes the publisher allocate about what the messages themselves
// cost, not a copy of every prefix held at each change (about 280 KB
// each, before). And matching still finds every prefix.
func TestSubscriptionToggleCostsLittle(t *testing.T) {
	pub, ep := bound(t, Config{})
	_, zc := rawPeer(t, ep, zmq4.Sub)
	ctx := testCtx(t)
	long := func(j int) string { return fmt.Sprintf("%04d", j) + strings.Repeat("x", 251) }
	for j := range 1023 {
		if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, long(j)...))); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.WaitSubscribers(ctx, long(1022)+"/topic", 1); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const toggles = 2000
	for range toggles {
		if zc.SendMsg(zmq4.NewMsg([]byte{1, 'z'})) != nil || zc.SendMsg(zmq4.NewMsg([]byte{0, 'z'})) != nil {
			t.Fatal("send failed")
		}
	}
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1, 'y'})); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(ctx, "y", 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if perChange := (after.TotalAlloc - before.TotalAlloc) / (2 * toggles); perChange > 4<<10 {
		t.Errorf("a subscription change made %d bytes be allocated, holding 1023 prefixes", perChange)
	}
	for _, topic := range []string{long(0), long(511) + "more", "y", "yes"} {
		if err := pub.WaitSubscribers(ctx, topic, 1); err != nil {
			t.Errorf("topic %q: %v", topic, err)
		}
	}
	var s *subscriber
	pub.sock.eachPeer(func(p *peer) { s = p.state.(*subscriber) })
	for _, topic := range []string{"z", "x", long(1)[:254], ""} {
		if s.matches([]byte(topic)) {
			t.Errorf("topic %q matches, but no prefix of it is held", topic)
		}
	}
}
