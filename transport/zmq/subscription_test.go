package zmq

import (
	"testing"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
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

// TestSubscribeBeyondMaxSubscriptions: a subscriber refuses to hold
// more distinct prefixes than MaxSubscriptions, the most a publisher
// takes from it (and what its queues for the set are sized by): it
// used to accept them, and was then disconnected by every publisher of
// the same bound, again at each reconnect, or refused every publisher
// once its queue could not take the set.
func TestSubscribeBeyondMaxSubscriptions(t *testing.T) {
	if _, err := NewSubscriber(t.Context(), Config{Connect: []string{"tcp://127.0.0.1:1"}, MaxSubscriptions: 2, Subscribe: []string{"a", "b", "c"}}); err == nil {
		t.Error("NewSubscriber took 3 prefixes, MaxSubscriptions 2")
	}
	pub, ep := bound(t, Config{MaxSubscriptions: 4})
	sub := connected(t, ep, Config{MaxSubscriptions: 4, Subscribe: []string{"a", "b", "c", "a"}})
	ctx := testCtx(t)
	if err := sub.Subscribe("d"); err != nil {
		t.Fatalf("a 4th prefix: %v", err)
	}
	if err := sub.Subscribe("a"); err != nil {
		t.Fatalf("a prefix held already: %v", err)
	}
	if err := sub.Subscribe("e"); err == nil {
		t.Error("Subscribe took a 5th prefix, MaxSubscriptions 4")
	}
	if err := pub.WaitSubscribers(ctx, "d", 1); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, transport.Message{Topic: "d", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, sub); m.Topic != "d" {
		t.Errorf("got topic %q, want d", m.Topic)
	}
	if st := pub.Stats(); st.RefusedSubscriptions != 0 || st.Accepted != 1 {
		t.Errorf("publisher: RefusedSubscriptions %d, Accepted %d: want 0 and 1", st.RefusedSubscriptions, st.Accepted)
	}
}

// TestInteropPyzmqResubscribe: a libzmq SUB that subscribed to "A"
// twice and unsubscribed from it twice is sent nothing of "A" (it
// sends two subscriptions and one cancel).
func TestInteropPyzmqResubscribe(t *testing.T) {
	pub, ep := bound(t, Config{})
	py := startPy(t, "resub", ep)
	py.next() // ready
	if err := pub.WaitSubscribers(testCtx(t), "B", 1); err != nil {
		t.Fatal(err)
	}
	if pubSees(pub, "A") {
		t.Error("the libzmq SUB is still sent \"A\" after unsubscribing from it as often as it subscribed")
	}
}

// TestMultiFrameSubscription: libzmq's PUB (4.3) reads every frame of a
// multi-frame message from a subscriber that begins with 1 or 0 as a
// subscription or a cancel (a pyzmq XSUB that sends [1 A][1 B][junk]
// is then sent A and B); ours ignored the whole message.
func TestMultiFrameSubscription(t *testing.T) {
	pub, ep := bound(t, Config{})
	_, zc := rawPeer(t, ep, zmq4.XSub)
	if err := zc.SendMsg(zmq4.NewMsgFrom([]byte{1, 'A'}, []byte{1, 'B'}, []byte("junk"))); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(testCtx(t), "B", 1); err != nil {
		t.Fatal(err)
	}
	if !pubSees(pub, "A") || pubSees(pub, "j") {
		t.Errorf("after [1 A][1 B][junk]: takes A %v (want true), junk's j %v (want false)", pubSees(pub, "A"), pubSees(pub, "j"))
	}
	if err := zc.SendMsg(zmq4.NewMsgFrom([]byte{0, 'A'}, []byte{0, 'B'})); err != nil {
		t.Fatal(err)
	}
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1, 'C'})); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(testCtx(t), "C", 1); err != nil {
		t.Fatal(err)
	}
	if pubSees(pub, "A") || pubSees(pub, "B") {
		t.Errorf("after [0 A][0 B]: takes A %v, B %v (want false)", pubSees(pub, "A"), pubSees(pub, "B"))
	}
	if n := pub.Stats().Ignored; n != 1 {
		t.Errorf("Ignored %d, want 1 (the junk frame)", n)
	}
}
