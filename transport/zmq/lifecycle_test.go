package zmq

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"go.uber.org/goleak"

	"github.com/brokerless/brokerless/transport"
)

// TestReconnectEveryEndpoint: a subscriber connected to two publishers
// gets both back after both restarted, and redials with backoff while
// they are down (go-zeromq/zmq4 redials only the last endpoint).
func TestReconnectEveryEndpoint(t *testing.T) {
	ctx := testCtx(t)
	a, epA := bound(t, Config{Feed: 1})
	b, epB := bound(t, Config{Feed: 2})
	sub, err := NewSubscriber(ctx, Config{Connect: []string{epA, epB}, Reconnect: 10 * time.Millisecond, ReconnectMax: 80 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.WaitPublishers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	if err := sub.sock.waitPeersBelow(ctx, 1); err != nil {
		t.Fatal(err)
	}
	before := sub.Stats().DialFailed
	time.Sleep(500 * time.Millisecond) // an outage: nothing to wait on
	failed := sub.Stats().DialFailed - before
	if failed < 2 || failed > 30 {
		t.Errorf("%d failed dials in 500 ms with backoff from 10 ms to 80 ms to two endpoints: want 2..30", failed)
	}
	for _, r := range []struct {
		ep   string
		feed uint32
	}{{epA, 1}, {epB, 2}} {
		p, err := NewPublisher(ctx, Config{Bind: []string{r.ep}, Feed: r.feed})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.WaitSubscribers(ctx, "t", 1); err != nil {
			t.Fatalf("feed %d never reconnected: %v", r.feed, err)
		}
		if err := p.Publish(ctx, transport.Message{Topic: "t", Payload: []byte("back")}); err != nil {
			t.Fatal(err)
		}
		if m := nextMessage(t, sub); m.Stream.Feed != r.feed {
			t.Fatalf("got a message of feed %d, want %d", m.Stream.Feed, r.feed)
		}
	}
}

// TestNoGoroutineLeft: a proxy, a balancer and their peers, used and
// closed, leave no goroutine behind (the conformance suite checks a
// publisher and a subscriber).
func TestNoGoroutineLeft(t *testing.T) {
	before := goleak.IgnoreCurrent()
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		px, err := NewProxy(ctx, ProxyConfig{XSubBind: []string{"tcp://127.0.0.1:0"}, XPubBind: []string{"ipc://" + t.TempDir() + "/xpub"}})
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		pub, err := NewPublisher(ctx, Config{Connect: []string{"tcp://" + px.XSubAddrs()[0].String()}})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		sub, err := NewSubscriber(ctx, Config{Connect: []string{"ipc://" + px.XPubAddrs()[0].String()}})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
			t.Fatal(err)
		}
		pub.Publish(ctx, transport.Message{Topic: "t"})
		nextMessage(t, sub)

		bl, err := NewBalancer(ctx, Config{Bind: []string{"tcp://127.0.0.1:0"}})
		if err != nil {
			t.Fatal(err)
		}
		defer bl.Close()
		w, err := NewWorker(ctx, Config{Connect: []string{"tcp://" + bl.Addrs()[0].String()}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		bl.Publish(ctx, transport.Message{Payload: []byte("task")})
		m := nextMessage(t, w)
		w.Ack(ctx, m.Stream, m.Seq)
		if err := bl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := goleak.Find(before)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Close: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCount waits until counter reaches n, failing the test after a
// while.
func waitCount(t *testing.T, what string, counter func() uint64, n uint64) {
	t.Helper()
	ctx := testCtx(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for counter() < n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s: %d, want %d", what, counter(), n)
		}
	}
}

// queuedItems lists what s's receive queue holds.
func queuedItems(s *Subscriber) []inItem {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return append([]inItem(nil), s.q.items[s.q.head:]...)
}

// TestEndedConnectionsBounded: publishers that connect and leave while
// the application is not receiving leave nothing in the receive queue
// unless they queued a message (the word that a connection ended was
// queued past the queue's bounds, one per connection, each holding the
// connection's buffers); and the word that a connection which did queue
// messages ended is still delivered, holding no buffers, so its stream
// ends.
func TestEndedConnectionsBounded(t *testing.T) {
	s, err := NewSubscriber(t.Context(), Config{Bind: []string{"tcp://127.0.0.1:0"}, ReceiveQueue: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ep := "tcp://" + s.Addrs()[0].String()
	disconnected := s.sock.stats.disconnected.Load
	const n = 200
	for range n {
		c, _ := rawPeer(t, ep, zmq4.Pub)
		c.Close()
	}
	waitCount(t, "disconnected", disconnected, n)
	if q := queuedItems(s); len(q) != 0 {
		t.Fatalf("%d connections that sent nothing left %d items in the receive queue (ReceiveQueue 10)", n, len(q))
	}

	c, zc := rawPeer(t, ep, zmq4.Pub)
	for _, p := range []string{"p1", "p2"} {
		if err := zc.SendMsg(zmq4.NewMsgFrom([]byte("t"), []byte(p))); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	waitCount(t, "disconnected", disconnected, n+1)
	q := queuedItems(s)
	if len(q) != 3 || !q[2].ended {
		t.Fatalf("receive queue holds %d items, want 2 messages and the end of their connection", len(q))
	}
	if q[2].conn.peer != nil {
		t.Error("the word that a connection ended holds the connection")
	}
	var got []transport.EventKind
	for len(got) < 4 {
		got = append(got, receive(t, s).Kind)
	}
	want := []transport.EventKind{transport.EventStreamStart, transport.EventMessage, transport.EventMessage, transport.EventStreamEnd}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestWaitPublishersAfterClose: WaitPublishers on a closed subscriber
// returns transport.ErrClosed, as the transport contract says, not an
// internal error.
func TestWaitPublishersAfterClose(t *testing.T) {
	sub := connected(t, "tcp://127.0.0.1:1", Config{})
	sub.Close()
	if err := sub.WaitPublishers(testCtx(t), 1); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("WaitPublishers after Close: %v, want transport.ErrClosed", err)
	}
}
