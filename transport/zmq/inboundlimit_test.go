package zmq

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// TestPublisherInboundBounded: a publisher takes nothing from a
// subscriber but subscriptions, so what a connection may send it is
// bounded by what a subscriber may hold (subscriptionBytes), not by
// MaxMessageBytes: zmq4 holds a message's frames until its last, and a
// hostile peer could make a publisher hold MaxMessageBytes (8 MiB by
// default) on each of its MaxPeers connections (8 GiB).
func TestPublisherInboundBounded(t *testing.T) {
	pub, ep := bound(t, Config{MaxSubscriptions: 4})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	frames := make([][]byte, 40)
	for i := range frames {
		frames[i] = bytes.Repeat([]byte{2}, 32<<10)
	}
	// 1.25 MiB in frames of 32 KiB: within MaxMessageBytes. The
	// publisher may close the connection before it is all sent.
	zc.SendMsg(zmq4.NewMsgFrom(frames...))
	if !closedSoon(c) {
		t.Errorf("a subscriber's 1.25 MiB message: connection still open (TooLarge %d)", pub.Stats().TooLarge)
	}
	waitCount(t, "TooLarge", func() uint64 { return pub.Stats().TooLarge }, 1)

	// The longest subscription a subscriber may hold still passes.
	_, zc = rawPeer(t, ep, zmq4.Sub)
	long := bytes.Repeat([]byte{'L'}, subscriptionBytes(4))
	if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, long...))); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(testCtx(t), string(long), 1); err != nil {
		t.Fatal(err)
	}
}

// TestPrefixBeyondInboundBound: a subscription whose prefix is longer
// than what a publisher holds of a subscriber's message (a libzmq SUB's
// prefix may be of any length; MaxSubscriptions 1 holds 256 bytes) is
// refused, its subscriber sent every topic, and its cancel filters it
// again; it used to fail the connection (TooLarge), again at each
// reconnect, so that subscriber was sent nothing.
func TestPrefixBeyondInboundBound(t *testing.T) {
	pub, ep := bound(t, Config{MaxSubscriptions: 1})
	_, zc := rawPeer(t, ep, zmq4.Sub)
	ctx := testCtx(t)
	for _, n := range []int{300, 1 << 20} {
		long := bytes.Repeat([]byte{'L'}, n)
		if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, long...))); err != nil {
			t.Fatal(err)
		}
		if err := pub.WaitSubscribers(ctx, string(long), 1); err != nil {
			t.Fatalf("%d-byte prefix: %v; publisher %+v", n, err, pub.Stats())
		}
		if err := zc.SendMsg(zmq4.NewMsg(append([]byte{0}, long...))); err != nil {
			t.Fatal(err)
		}
		for pubSees(pub, "z") {
			if ctx.Err() != nil {
				t.Fatalf("%d-byte prefix cancelled, still sent every topic; publisher %+v", n, pub.Stats())
			}
			time.Sleep(time.Millisecond) // polling the fanout's state, no event to wait on
		}
	}
	if st := pub.Stats(); st.TooLarge != 0 || st.RefusedSubscriptions != 2 || st.Accepted != 1 {
		t.Errorf("TooLarge %d, RefusedSubscriptions %d, Accepted %d: want 0, 2, 1", st.TooLarge, st.RefusedSubscriptions, st.Accepted)
	}
}

// TestInteropPyzmqSubPrefixBeyondInboundBound: a libzmq SUB subscribed
// to a prefix longer than a publisher holds (MaxSubscriptions 1) is
// sent what it subscribed to; its connection used to fail (TooLarge).
func TestInteropPyzmqSubPrefixBeyondInboundBound(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{MaxSubscriptions: 1})
	long := string(bytes.Repeat([]byte{'L'}, 300))
	py := startPy(t, "sub", ep, "1", long)
	py.next() // ready
	if err := pub.WaitSubscribers(ctx, long+"x", 1); err != nil {
		t.Fatalf("%v; publisher %+v", err, pub.Stats())
	}
	if err := pub.Publish(ctx, transport.Message{Topic: long + "x", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	if m := py.next(); m["topic"] != long+"x" {
		t.Fatalf("libzmq SUB got %v", m)
	}
	py.wait()
	if st := pub.Stats(); st.TooLarge != 0 {
		t.Errorf("TooLarge %d, want 0", st.TooLarge)
	}
}
