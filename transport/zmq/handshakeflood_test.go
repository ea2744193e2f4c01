package zmq

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestHandshakeFloodLocksNoOneOut: MaxHandshakes silent connections
// (a slowloris reopening each as its handshake times out) do not keep
// a subscriber out. Refused at accept while they were held, a
// subscriber was kept out for as long as the flood went on, by
// MaxHandshakes (64) connections where MaxPeers (1024) were needed
// before. The oldest connection still in its handshake now makes room
// for a new one.
func TestHandshakeFloodLocksNoOneOut(t *testing.T) {
	const hs, maxHS = 10 * time.Second, 4
	pub, ep := bound(t, Config{MaxHandshakes: maxHS, HandshakeTimeout: hs})
	e, _ := parseEndpoint(ep)
	for range maxHS {
		c, err := net.Dial(e.network, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	waitCount(t, "Accepted", func() uint64 { return pub.Stats().Accepted }, maxHS)

	connected(t, ep, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), hs/3)
	defer cancel()
	if err := pub.WaitSubscribers(ctx, "", 1); err != nil {
		t.Fatalf("a subscriber kept out by %d silent connections (MaxHandshakes %d): %v; publisher %+v", maxHS, maxHS, err, pub.Stats())
	}
	pub.sock.mu.Lock()
	n := pub.sock.handshaking
	pub.sock.mu.Unlock()
	if n > maxHS {
		t.Errorf("%d connections in their handshake, MaxHandshakes %d", n, maxHS)
	}
}

// TestHandshakeBurstConverges: a burst of real libzmq SUBs, many more
// than MaxHandshakes, connecting at once, whose application never reads:
// such a SUB, once cut, redials but sends its subscriptions again only
// when its application calls into the socket. Their handshakes are not
// cut (new connections wait in the backlog), and every one is a
// subscriber soon. (With the wait disabled, 4 of 200 were; SUBs that
// read converged in 1 s even so, after some 350 cuts.)
func TestHandshakeBurstConverges(t *testing.T) {
	const n, maxHS = 200, 4
	pub, ep := bound(t, Config{MaxHandshakes: maxHS})
	py := startPy(t, "burst", ep, fmt.Sprint(n))
	py.next()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := pub.WaitSubscribers(ctx, "", n); err != nil {
		got := 0
		pub.sock.eachPeer(func(pr *peer) {
			if pr.state.(*subscriber).matches(nil) {
				got++
			}
		})
		t.Fatalf("%d libzmq SUBs connecting at once, MaxHandshakes %d: %v; %d connected, %d of them subscribed; publisher %+v", n, maxHS, err, pub.Subscribers(), got, pub.Stats())
	}
	t.Logf("publisher %+v", pub.Stats())
}
