package zmq

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/go-zeromq/zmq4"

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

// pausedAttach holds a subscribing socket's new peers between their
// attach (which sends them the subscription set) and the socket listing
// them, until proceed closes.
type pausedAttach struct {
	*inbound
	attached, proceed chan struct{}
}

func (r pausedAttach) attach(p *peer) error {
	err := r.inbound.attach(p)
	close(r.attached)
	<-r.proceed
	return err
}

// TestSubscribeDuringAttachReachesPeer: a Subscribe made after a new
// publisher connection got the subscription set, but before the socket
// lists it among its peers, reaches that publisher too (it used to be
// sent only to the peers listed).
func TestSubscribeDuringAttachReachesPeer(t *testing.T) {
	sub, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, Subscribe: []string{"a."}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	r := pausedAttach{sub.in, make(chan struct{}), make(chan struct{})}
	sub.sock.role = r
	pub, err := NewPublisher(t.Context(), Config{Connect: []string{"tcp://" + sub.Addrs()[0].String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	<-r.attached
	if err := sub.Subscribe("b."); err != nil {
		t.Fatal(err)
	}
	close(r.proceed)
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "b.x", 1); err != nil {
		t.Errorf("Subscribe(b.) made while the publisher was attaching never reached it: %v", err)
	}
}

// TestProxyTakesPublishersWhateverTheSubscriptions: subscribers holding
// together more prefixes than SubscriberQueueBytes holds (each within
// MaxSubscriptions) do not lock publishers out of the proxy: a publisher
// that connects is sent the whole set (it used to be refused, again and
// again, with nothing counted).
func TestProxyTakesPublishersWhateverTheSubscriptions(t *testing.T) {
	ctx := testCtx(t)
	px, xsub, xpub := startProxy(t, Config{SubscriberQueueBytes: 64 << 10, MaxSubscriptions: 64})
	prefix := func(i, j int) string { return fmt.Sprintf("%03d.%04d.", i, j) + strings.Repeat("x", maxPrefix-9) }
	const subs = 4
	for i := range subs {
		_, zc := rawPeer(t, xpub, zmq4.Sub)
		for j := range 64 {
			if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, prefix(i, j)...))); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitCount(t, "proxy prefixes", func() uint64 { return uint64(px.Stats().Prefixes) }, subs*64)
	pub, err := NewPublisher(ctx, Config{Connect: []string{xsub}})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, topic := range []string{prefix(0, 0), prefix(subs-1, 63)} {
		if err := pub.WaitSubscribers(ctx, topic, 1); err != nil {
			t.Fatalf("the publisher never got the subscription %.12q...: %v (proxy %+v)", topic, err, px.Stats())
		}
	}
	if st := px.Stats(); st.RefusedPublishers != 0 {
		t.Errorf("proxy refused %d publishers", st.RefusedPublishers)
	}
}

// TestRefusedPublisherCounted: a publisher connection refused after its
// handshake, because the subscription set does not fit its queue (in
// bytes: a subscriber holds no more prefixes than its queue counts), is
// counted.
func TestRefusedPublisherCounted(t *testing.T) {
	_, ep := bound(t, Config{})
	var prefixes []string
	for i := range 40 {
		prefixes = append(prefixes, fmt.Sprintf("p%d.", i))
	}
	sub := connected(t, ep, Config{SubscriberQueueBytes: 1, Subscribe: prefixes}) // takes one prefix
	waitCount(t, "RefusedPublishers", func() uint64 { return sub.Stats().RefusedPublishers }, 1)
	if n := sub.Publishers(); n != 0 {
		t.Errorf("%d publishers connected", n)
	}
}

// TestProxyCountsFailedConnections: a connection of either side of a
// proxy failed for a frame over MaxMessageBytes is counted in its stats.
func TestProxyCountsFailedConnections(t *testing.T) {
	px, xsub, xpub := startProxy(t, Config{MaxMessageBytes: 4096})
	for i, ep := range []string{xsub, xpub} {
		typ := map[bool]zmq4.SocketType{true: zmq4.Pub, false: zmq4.Sub}[ep == xsub]
		c, _ := rawPeer(t, ep, typ)
		if _, err := c.Write(append(binary.BigEndian.AppendUint64([]byte{flagLong}, 4097), "some"...)); err != nil {
			t.Fatal(err)
		}
		if !closedSoon(c) {
			t.Fatalf("%s: a frame over MaxMessageBytes did not close the connection", ep)
		}
		waitCount(t, "TooLarge", func() uint64 { return px.Stats().TooLarge }, uint64(i+1))
	}
}
