package zmq

import (
	"bytes"
	"testing"

	"github.com/go-zeromq/zmq4"
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
