package zmq

import (
	"testing"

	"github.com/go-zeromq/zmq4"
)

// TestRepeatedSubscriptionOneCancel: a subscriber's subscriptions are
// a set at the publisher, as at libzmq's PUB (its trie keeps a set of
// pipes per prefix): libzmq's SUB sends a subscription each time the
// application subscribes, but a cancel only when the last of them is
// undone, so one cancel must end a prefix subscribed twice. (pyzmq's
// SUB, subscribed twice to "A" and unsubscribed twice, sends
// [1 A] [1 A] [0 A]; pyzmq's PUB then sends it nothing of "A".)
func TestRepeatedSubscriptionOneCancel(t *testing.T) {
	pub, ep := bound(t, Config{})
	_, zc := rawPeer(t, ep, zmq4.Sub)
	for _, m := range [][]byte{{1, 'A'}, {1, 'A'}, {0, 'A'}, {1, 'B'}} {
		if err := zc.SendMsg(zmq4.NewMsg(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.WaitSubscribers(testCtx(t), "B", 1); err != nil {
		t.Fatal(err)
	}
	if pubSees(pub, "A") {
		t.Error("the subscriber still takes \"A\" after subscribing twice and cancelling (libzmq's SUB sends one cancel)")
	}
	// A cancel of what is not held changes nothing.
	if err := zc.SendMsg(zmq4.NewMsg([]byte{0, 'A'})); err != nil {
		t.Fatal(err)
	}
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1, 'C'})); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(testCtx(t), "C", 1); err != nil {
		t.Fatal(err)
	}
	if !pubSees(pub, "B") || pubSees(pub, "A") {
		t.Errorf("after a stray cancel: takes B %v (want true), A %v (want false)", pubSees(pub, "B"), pubSees(pub, "A"))
	}
}
