package zmq

import (
	"strings"
	"testing"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// TestLongSubscriptionPrefix: a publisher takes a subscription prefix
// longer than 255 bytes, as libzmq's PUB does; it used to refuse it
// (counted only in RefusedSubscriptions), so a libzmq SUB subscribed to
// a long topic was sent nothing and told nothing. What a subscriber
// holds stays bounded: its prefixes' bytes at most MaxSubscriptions
// times 256, the most it could hold of short ones.
func TestLongSubscriptionPrefix(t *testing.T) {
	pub, ep := bound(t, Config{MaxSubscriptions: 4})
	_, zc := rawPeer(t, ep, zmq4.Sub)
	long := strings.Repeat("L", 300)
	longer := strings.Repeat("M", 700)
	for _, pre := range []string{long, longer} {
		if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, pre...))); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, longer+"/x", 1); err != nil {
		t.Fatal(err)
	}
	if !pubSees(pub, long+"/y") || !pubSees(pub, long) || pubSees(pub, long[:299]) {
		t.Errorf("a 300-byte prefix: takes a longer topic %v, itself %v (want true, true), a shorter one %v (want false)",
			pubSees(pub, long+"/y"), pubSees(pub, long), pubSees(pub, long[:299]))
	}
	if err := pub.Publish(ctx, transport.Message{Topic: long + "/y", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	m, err := zc.RecvMsg()
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Frames[0]) != long+"/y" {
		t.Errorf("got topic %q, want the long one", m.Frames[0])
	}
	if st := pub.Stats(); st.RefusedSubscriptions != 0 {
		t.Errorf("RefusedSubscriptions %d, want 0", st.RefusedSubscriptions)
	}
	if err := zc.SendMsg(zmq4.NewMsg(append([]byte{0}, longer...))); err != nil {
		t.Fatal(err)
	}
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1, 's'})); err != nil {
		t.Fatal(err)
	}
	if err := pub.WaitSubscribers(ctx, "s", 1); err != nil {
		t.Fatal(err)
	}
	if pubSees(pub, longer+"/x") {
		t.Error("a cancelled 700-byte prefix is still held")
	}
	// 301 bytes held: 800 more go beyond 4*256.
	if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, strings.Repeat("N", 800)...))); err != nil {
		t.Fatal(err)
	}
	waitCount(t, "RefusedSubscriptions", func() uint64 { return pub.Stats().RefusedSubscriptions }, 1)
}
