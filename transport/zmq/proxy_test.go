package zmq

import (
	"context"
	"net"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// startProxy starts a proxy bound on two free ports of 127.0.0.1 and
// returns it with its XSUB and XPUB endpoints.
func startProxy(t *testing.T, cfg Config) (*Proxy, string, string) {
	t.Helper()
	p, err := NewProxy(context.Background(), ProxyConfig{
		XSubBind: []string{"tcp://127.0.0.1:0"}, XPubBind: []string{"tcp://127.0.0.1:0"}, Config: cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, "tcp://" + p.XSubAddrs()[0].(*net.TCPAddr).String(), "tcp://" + p.XPubAddrs()[0].(*net.TCPAddr).String()
}

// TestProxyForwardsSubscriptions: a publisher behind the proxy sees the
// subscriptions of a subscriber in front of it — one made after
// start-up too — and stops seeing one the subscriber dropped; messages
// keep their streams and numbers through it.
func TestProxyForwardsSubscriptions(t *testing.T) {
	ctx := testCtx(t)
	px, xsub, xpub := startProxy(t, Config{})
	pub, err := NewPublisher(ctx, Config{Connect: []string{xsub}})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	sub := connected(t, xpub, Config{Subscribe: []string{"a."}})
	if err := pub.WaitSubscribers(ctx, "a.1", 1); err != nil {
		t.Fatal(err)
	}
	publish := func(topic, payload string) {
		t.Helper()
		if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
	}
	publish("b.1", "not subscribed")
	publish("a.1", "one")
	if m := nextMessage(t, sub); m.Topic != "a.1" || string(m.Payload) != "one" || m.Seq != 1 || m.Stream.Feed != ProcessFeed {
		t.Fatalf("got %+v", m)
	}
	if err := sub.Subscribe("b."); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(ctx, "b.1", 1); err != nil {
		t.Fatalf("the subscription made after start-up never reached the publisher: %v", err)
	}
	publish("b.1", "two")
	if m := nextMessage(t, sub); m.Topic != "b.1" || string(m.Payload) != "two" || m.Seq != 2 {
		t.Fatalf("got %+v, want b.1 seq 2 (seq 1 was published before the subscription)", m)
	}
	sub.Unsubscribe("a.")
	for {
		changed := pub.sock.peersChanged.wait()
		if !pubSees(pub, "a.1") {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the unsubscription never reached the publisher")
		}
	}
	st := px.Stats()
	if st.Subscribed != 2 || st.Unsubscribed != 1 || st.Prefixes != 1 || st.Forwarded < 2 {
		t.Errorf("proxy stats %+v: want 2 subscribed, 1 unsubscribed, 1 prefix, 2 or more forwarded", st)
	}
}

// pubSees reports whether some subscriber of pub takes topic.
func pubSees(pub *Publisher, topic string) bool {
	seen := false
	pub.sock.eachPeer(func(p *peer) { seen = seen || p.state.(*subscriber).matches([]byte(topic)) })
	return seen
}
