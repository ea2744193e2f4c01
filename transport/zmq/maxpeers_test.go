package zmq

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestHandshakingNotCountedInMaxPeers: connections still in their
// handshake do not take the places of MaxPeers. A peer that connects
// and says nothing (a port probe, a client of another protocol, one
// reconnecting every few seconds) used to hold a place until the
// handshake timed out, keeping a subscriber out meanwhile (libzmq has
// no such cap). Handshaking connections are bounded on their own, and
// peers past the handshake by MaxPeers.
func TestHandshakingNotCountedInMaxPeers(t *testing.T) {
	const hs = 10 * time.Second
	pub, ep := bound(t, Config{MaxPeers: 1, HandshakeTimeout: hs})
	e, _ := parseEndpoint(ep)
	c, err := net.Dial(e.network, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitCount(t, "Accepted", func() uint64 { return pub.Stats().Accepted }, 1)

	sub := connected(t, ep, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), hs/2)
	defer cancel()
	if err := pub.WaitSubscribers(ctx, "", 1); err != nil {
		t.Fatalf("a subscriber kept out by a silent connection in its handshake (MaxPeers 1): %v; publisher %+v", err, pub.Stats())
	}
	if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, sub); string(m.Payload) != "x" {
		t.Errorf("got %q, want x", m.Payload)
	}

	// A second subscriber is refused, while the first keeps its place.
	connected(t, ep, Config{})
	waitCount(t, "Refused", func() uint64 { return pub.Stats().Refused }, 1)
	if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, sub); string(m.Payload) != "y" {
		t.Errorf("got %q, want y", m.Payload)
	}
	pub.sock.mu.Lock()
	n := len(pub.sock.peers)
	pub.sock.mu.Unlock()
	if n != 1 {
		t.Errorf("%d peers, MaxPeers 1", n)
	}

	// Silent connections beyond their own bound (MaxHandshakes) close
	// the oldest at once.
	pub2, ep2 := bound(t, Config{HandshakeTimeout: hs})
	e2, _ := parseEndpoint(ep2)
	for range DefaultMaxHandshakes + 3 {
		c, err := net.Dial(e2.network, e2.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	waitCount(t, "Accepted", func() uint64 { return pub2.Stats().Accepted }, DefaultMaxHandshakes+3)
	pub2.sock.mu.Lock()
	n = pub2.sock.handshaking
	pub2.sock.mu.Unlock()
	if st := pub2.Stats(); n != DefaultMaxHandshakes || st.Refused != 3 {
		t.Errorf("%d connections in their handshake, %d refused: want MaxHandshakes %d and 3", n, st.Refused, DefaultMaxHandshakes)
	}

	// Two connections whose handshakes were under way together: the
	// first done takes the last place, the second is refused then.
	pub3, _ := bound(t, Config{MaxPeers: 1})
	a, _ := net.Pipe()
	b, _ := net.Pipe()
	if !pub3.sock.track(a, true) || !pub3.sock.track(b, true) {
		t.Fatal("two connections in their handshake refused, MaxPeers 1")
	}
	if !pub3.sock.admit(a) || pub3.sock.admit(b) {
		t.Error("want the first admitted, the second not (MaxPeers 1)")
	}
	pub3.sock.untrack(a)
	pub3.sock.untrack(b)
	if pub3.sock.handshaking != 0 || pub3.sock.admitted != 0 {
		t.Errorf("after both ended: %d handshaking, %d admitted", pub3.sock.handshaking, pub3.sock.admitted)
	}
}
