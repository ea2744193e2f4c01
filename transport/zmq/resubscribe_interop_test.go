package zmq

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// A libzmq (4.3) SUB sends its subscriptions again on a new connection
// only when its application next calls into the socket: the session's
// reconnect "hiccups" the pipe, and the socket resends from the
// application's thread when it processes that command. So a libzmq SUB
// whose application reads converges, wherever we close its connection
// (at accept, in the handshake, past READY both ways); one whose
// application does not read is sent nothing until it does. These tests
// close a libzmq SUB's connections in each place our publisher does.

// until reads the python peer's lines until one satisfies done, and
// returns those read; it fails the test after testTimeout.
func (p *pyPeer) until(done func(m map[string]any) bool) []map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	var seen []map[string]any
	for {
		m := p.nextWithin(max(time.Until(deadline), 0))
		seen = append(seen, m)
		if done(m) {
			return seen
		}
	}
}

// receivesAfter waits until a subscriber of the publisher takes topic
// (the python peer's subscription may reach us well after its
// connection), publishes on another topic and on topic, and fails the
// test unless the python peer, a SUB of "a.", prints the second.
func receivesAfter(t *testing.T, pub *Publisher, py *pyPeer, topic string) {
	t.Helper()
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, topic, 1); err != nil {
		t.Fatalf("no libzmq SUB subscribed to %q: %v; publisher %+v", topic, err, pub.Stats())
	}
	for _, m := range []transport.Message{{Topic: "b.x", Payload: []byte("not subscribed")}, {Topic: topic, Payload: []byte("after")}} {
		if err := pub.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	seen := py.until(func(m map[string]any) bool { return m["msg"] != nil })
	if got := seen[len(seen)-1]; got["topic"] != topic || got["msg"] != "after" {
		t.Fatalf("libzmq SUB of a. got %v, want %q on %s", got, "after", topic)
	}
}

// subscribedTo counts the publisher's subscribers that take topic.
func subscribedTo(pub *Publisher, topic string) int {
	n := 0
	pub.sock.eachPeer(func(pr *peer) {
		if pr.state.(*subscriber).matches([]byte(topic)) {
			n++
		}
	})
	return n
}

// TestInteropPyzmqSubRefusedAtMaxPeersConverges: a libzmq SUB of "a."
// on a publisher with MaxPeers 1 held by another subscriber is refused
// past its handshake (its handshake was under way when the place went:
// libzmq saw READY both ways, then the close), then at accept on each
// redial (before any greeting); once the place is free, it is admitted
// and gets what it subscribed to.
func TestInteropPyzmqSubRefusedAtMaxPeersConverges(t *testing.T) {
	pub, ep := bound(t, Config{MaxPeers: 1})
	r := startRelay(t, ep)
	release := r.holdNext()
	defer release()
	py := startPy(t, "monsub", r.endpoint(), "a.")
	py.waitFor("ready", true)
	waitCount(t, "Accepted", func() uint64 { return pub.Stats().Accepted }, 1)

	// The place goes to another subscriber while libzmq's greeting is
	// held in the relay.
	holder := connected(t, ep, Config{})
	if err := pub.WaitSubscribers(testCtx(t), "", 1); err != nil {
		t.Fatal(err)
	}
	release()

	// Refused past its handshake, then at accept.
	seen := py.until(func(m map[string]any) bool { return m["event"] == "disconnected" })
	shook := false
	for _, m := range seen {
		shook = shook || m["event"] == "handshake_succeeded"
	}
	if !shook {
		t.Fatalf("libzmq's first connection closed before its handshake succeeded: %v; publisher %+v", seen, pub.Stats())
	}
	t.Logf("refused past its handshake: %v", seen)
	seen = py.until(func(m map[string]any) bool {
		return m["event"] == "disconnected" || m["event"] == "handshake_succeeded"
	})
	if m := seen[len(seen)-1]; m["event"] != "disconnected" {
		t.Fatalf("libzmq redialled and completed a handshake, MaxPeers 1 held: %v; publisher %+v", seen, pub.Stats())
	}
	t.Logf("refused at accept: %v", seen)
	if st := pub.Stats(); st.Refused < 2 || pub.Subscribers() != 1 {
		t.Fatalf("publisher %+v, %d subscribers: want 2 refused at least, and the holder", st, pub.Subscribers())
	}

	holder.Close()
	waitCount(t, "Disconnected", pub.sock.stats.disconnected.Load, 1)
	receivesAfter(t, pub, py, "a.x")
	t.Logf("publisher %+v", pub.Stats())
}

// TestInteropPyzmqSubCutInHandshakeConverges: a libzmq SUB of "a."
// whose greeting is held past HandshakeTimeout is cut in its handshake
// (it has our greeting, we have nothing of its); it redials, and gets
// what it subscribed to.
func TestInteropPyzmqSubCutInHandshakeConverges(t *testing.T) {
	pub, ep := bound(t, Config{HandshakeTimeout: 500 * time.Millisecond})
	r := startRelay(t, ep)
	release := r.holdNext()
	defer release()
	py := startPy(t, "monsub", r.endpoint(), "a.")
	py.waitFor("ready", true)
	waitCount(t, "HandshakeFailed", func() uint64 { return pub.Stats().HandshakeFailed }, 1)
	release()

	seen := py.until(func(m map[string]any) bool {
		return m["event"] == "disconnected" || m["event"] == "handshake_succeeded"
	})
	if m := seen[len(seen)-1]; m["event"] != "disconnected" {
		t.Fatalf("libzmq's handshake succeeded on a connection cut in it: %v", seen)
	}
	receivesAfter(t, pub, py, "a.x")
	t.Logf("publisher %+v", pub.Stats())
}

// TestInteropLatePyzmqSubConverges: a libzmq SUB of "a." whose
// application does not call into its socket yet is refused at MaxPeers
// (at accept) while the place is held; it is admitted once the place is
// free, subscribed to nothing (libzmq has not sent its subscriptions
// again), and gets what it subscribed to once its application reads.
func TestInteropLatePyzmqSubConverges(t *testing.T) {
	pub, ep := bound(t, Config{MaxPeers: 1})
	holder := connected(t, ep, Config{})
	if err := pub.WaitSubscribers(testCtx(t), "", 1); err != nil {
		t.Fatal(err)
	}
	py := startPy(t, "latesub", ep, "a.")
	py.waitFor("ready", true)
	waitCount(t, "Refused", func() uint64 { return pub.Stats().Refused }, 2)
	holder.Close()
	waitCount(t, "Disconnected", pub.sock.stats.disconnected.Load, 1)
	waitTrue(t, "the libzmq SUB admitted", func() bool { return pub.Subscribers() == 1 })
	t.Logf("admitted, its application not reading: %d subscribed to a.x, publisher %+v", subscribedTo(pub, "a.x"), pub.Stats())
	py.send("read")
	py.waitFor("reading", true)
	receivesAfter(t, pub, py, "a.x")
	t.Logf("publisher %+v", pub.Stats())
}

// kill ends the python peer at once (SIGKILL) and waits for it: its
// listener and connections are closed.
func (p *pyPeer) kill() {
	p.t.Helper()
	p.cmd.Process.Kill()
	<-p.done
	p.cmd.Wait()
}

// TestInteropSubResubscribesToRestartedPyzmqPub: our subscriber of "t"
// on a libzmq XPUB that is killed while our handshake with it is held
// (cut in the handshake), then started again on the same port, then
// killed and started again once subscribed: it subscribes again on each
// new connection, and receives.
func TestInteropSubResubscribesToRestartedPyzmqPub(t *testing.T) {
	py := startPy(t, "hbpub", "0", "0", "0")
	ep := py.waitFor("endpoint", nil)["endpoint"].(string)
	r := startRelay(t, ep)
	release := r.holdNext()
	defer release()
	sub := connected(t, r.endpoint(), Config{Subscribe: []string{"t"}, Reconnect: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond})
	py.waitFor("event", "accepted")
	py.kill()
	waitCount(t, "Handshake failed", func() uint64 { return sub.Stats().Handshake }, 1)
	release()

	for i, payload := range []string{"after a cut in the handshake", "after a restart"} {
		if i > 0 {
			py.kill()
		}
		py = startPy(t, "hbpub", "0", "0", "0", ep)
		py.waitFor("endpoint", ep)
		py.waitFor("subscribed", "t")
		py.send("send " + payload)
		py.waitFor("sent", payload)
		if m := nextMessage(t, sub); string(m.Payload) != payload {
			t.Fatalf("got %q, want %q", m.Payload, payload)
		}
	}
	t.Logf("subscriber %+v", sub.Stats())
}
