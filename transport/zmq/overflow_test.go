package zmq

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// TestSubscriptionsBeyondMaxSent: a subscriber that subscribes beyond
// MaxSubscriptions (a libzmq SUB to 2000 symbols, a proxy forwarding the
// prefixes of all its subscribers) is sent every topic from then on,
// which its own filter sorts out, as libzmq's SUB and our Subscriber
// filter what they receive; it used to be disconnected, and again after
// each reconnect when it sent its set anew: sent nothing, for ever.
func TestSubscriptionsBeyondMaxSent(t *testing.T) {
	pub, ep := bound(t, Config{MaxSubscriptions: 2})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	for _, pre := range []string{"a", "b", "c"} {
		if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, pre...))); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testCtx(t)
	if err := pub.WaitSubscribers(ctx, "c", 1); err != nil {
		t.Fatalf("%v; publisher %+v", err, pub.Stats())
	}
	for _, topic := range []string{"c1", "z1"} {
		if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		m, err := zc.RecvMsg()
		if err != nil {
			t.Fatalf("%s: %v; publisher %+v", topic, err, pub.Stats())
		}
		if string(m.Frames[0]) != topic {
			t.Errorf("got %q, want %q", m.Frames[0], topic)
		}
	}
	if st := pub.Stats(); st.RefusedSubscriptions != 1 || st.Subscribers != 1 {
		t.Errorf("RefusedSubscriptions %d, Subscribers %d: want 1 and 1", st.RefusedSubscriptions, st.Subscribers)
	}
	_ = c
}

// TestProxyBeyondPublisherMaxSubscriptions: subscribers of a proxy
// holding together more prefixes than a publisher behind it takes from
// one subscriber each get their topics, and only them.
func TestProxyBeyondPublisherMaxSubscriptions(t *testing.T) {
	ctx := testCtx(t)
	_, xsub, xpub := startProxy(t, Config{})
	pub, err := NewPublisher(ctx, Config{Connect: []string{xsub}, MaxSubscriptions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var subs []*Subscriber
	for i := range 3 {
		subs = append(subs, connected(t, xpub, Config{Subscribe: []string{fmt.Sprint(i)}}))
	}
	for i := range 3 {
		if err := pub.WaitSubscribers(ctx, fmt.Sprint(i), 1); err != nil {
			t.Fatalf("%d: %v; publisher %+v", i, err, pub.Stats())
		}
	}
	for i := range 3 {
		if err := pub.Publish(ctx, transport.Message{Topic: fmt.Sprint(i), Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range subs {
		if m := nextMessage(t, s); m.Topic != fmt.Sprint(i) {
			t.Errorf("subscriber %d got topic %q", i, m.Topic)
		}
	}
}

// TestInteropPyzmqSubLongAndMany: a libzmq SUB subscribed to a prefix
// longer than 255 bytes, and to more prefixes than MaxSubscriptions, is
// sent what it subscribed to (libzmq's PUB sets no such bound); it used
// to be sent nothing of the long prefix, and to be disconnected, again
// at each reconnect, beyond MaxSubscriptions.
func TestInteropPyzmqSubLongAndMany(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{MaxSubscriptions: 2})
	long := strings.Repeat("L", 300)
	py := startPy(t, "sub", ep, "3", "a.", "b.", "c.", long)
	py.next() // ready
	for _, topic := range []string{"b.x", "c.x", long + "x"} {
		if err := pub.WaitSubscribers(ctx, topic, 1); err != nil {
			t.Fatalf("the libzmq SUB is not sent %.10q...: %v; publisher %+v", topic, err, pub.Stats())
		}
	}
	for _, topic := range []string{"b.x", "c.x", long + "x"} {
		if err := pub.Publish(ctx, transport.Message{Topic: topic, Payload: []byte("p")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"b.x", "c.x", long + "x"} {
		if m := py.next(); m["topic"] != want {
			t.Fatalf("libzmq SUB got %v, want topic %.10q...", m, want)
		}
	}
	py.wait()
}

// TestBeyondMaxBackToFiltering: a subscriber sent every topic for
// subscribing beyond MaxSubscriptions is filtered again once it has
// cancelled what was refused, and not before (a prefix refused and
// still wanted is never filtered out). It used to be sent every topic
// until it disconnected.
func TestBeyondMaxBackToFiltering(t *testing.T) {
	pub, ep := bound(t, Config{MaxSubscriptions: 2})
	_, zc := rawPeer(t, ep, zmq4.Sub)
	send := func(add byte, pre string) {
		t.Helper()
		if err := zc.SendMsg(zmq4.NewMsg(append([]byte{add}, pre...))); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testCtx(t)
	send(1, "a")
	send(1, "b")
	send(1, "c") // refused: sent every topic
	if err := pub.WaitSubscribers(ctx, "c", 1); err != nil {
		t.Fatal(err)
	}
	send(0, "a")
	send(1, "e") // fits now; c is still wanted
	if err := pub.WaitSubscribers(ctx, "e", 1); err != nil {
		t.Fatal(err)
	}
	if !pubSees(pub, "c") {
		t.Fatal("c, refused and not cancelled, filtered out")
	}
	send(0, "c")
	for pubSees(pub, "z") {
		if ctx.Err() != nil {
			t.Fatalf("c cancelled, a subscriber of b and e still sent every topic; publisher %+v", pub.Stats())
		}
		time.Sleep(time.Millisecond) // polling the fanout's state, no event to wait on
	}
	for topic, want := range map[string]bool{"a": false, "b": true, "c": false, "e": true} {
		if pubSees(pub, topic) != want {
			t.Errorf("sends %s: %v, want %v", topic, !want, want)
		}
	}
	pub.fan.mu.Lock()
	n := pub.fan.total[""]
	pub.fan.mu.Unlock()
	if n != 0 {
		t.Errorf("%d subscribers of every topic counted, want 0", n)
	}
}

// TestInteropPyzmqSubBackToFiltering: a libzmq SUB beyond
// MaxSubscriptions is filtered again once it unsubscribes what was
// refused (libzmq sends a cancel for what it subscribed only).
func TestInteropPyzmqSubBackToFiltering(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{MaxSubscriptions: 2})
	py := startPy(t, "subunsub", ep, "a.", "b.", "c.")
	py.next() // ready
	if err := pub.WaitSubscribers(ctx, "c.x", 1); err != nil {
		t.Fatalf("%v; publisher %+v", err, pub.Stats())
	}
	if _, err := py.stdin.Write([]byte("unsub c.\n")); err != nil {
		t.Fatal(err)
	}
	py.next() // done
	for pubSees(pub, "z") {
		if ctx.Err() != nil {
			t.Fatalf("c. unsubscribed, the libzmq SUB still sent every topic; publisher %+v", pub.Stats())
		}
		time.Sleep(time.Millisecond) // polling the fanout's state, no event to wait on
	}
	if !pubSees(pub, "a.x") || !pubSees(pub, "b.x") || pubSees(pub, "c.x") {
		t.Errorf("sends a.x %v, b.x %v, c.x %v: want true, true, false", pubSees(pub, "a.x"), pubSees(pub, "b.x"), pubSees(pub, "c.x"))
	}
}

// TestInteropPyzmqSubRefusedTwice: a libzmq SUB that subscribes twice to
// a prefix beyond MaxSubscriptions sends two subscriptions and, for its
// two unsubscribes, one cancel; it is filtered again after it. Counting
// refusals, the publisher sent it every topic until it disconnected.
func TestInteropPyzmqSubRefusedTwice(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{MaxSubscriptions: 2})
	py := startPy(t, "subunsub", ep, "a.", "b.")
	py.next() // ready
	if err := pub.WaitSubscribers(ctx, "b.x", 1); err != nil {
		t.Fatalf("%v; publisher %+v", err, pub.Stats())
	}
	for _, line := range []string{"sub c.", "sub c."} {
		fmt.Fprintln(py.stdin, line)
		py.next()
	}
	waitCount(t, "RefusedSubscriptions", func() uint64 { return pub.Stats().RefusedSubscriptions }, 2)
	for _, line := range []string{"unsub c.", "unsub c."} {
		fmt.Fprintln(py.stdin, line)
		py.next()
	}
	for pubSees(pub, "z") {
		if ctx.Err() != nil {
			t.Fatalf("c. subscribed twice and unsubscribed twice, the libzmq SUB still sent every topic; publisher %+v", pub.Stats())
		}
		time.Sleep(time.Millisecond) // polling the fanout's state, no event to wait on
	}
	if !pubSees(pub, "a.x") || !pubSees(pub, "b.x") || pubSees(pub, "c.x") {
		t.Errorf("sends a.x %v, b.x %v, c.x %v: want true, true, false", pubSees(pub, "a.x"), pubSees(pub, "b.x"), pubSees(pub, "c.x"))
	}
}

// TestRefusedStillWanted: a subscriber sent every topic stays so while
// it may still want a refused prefix: cancels of other prefixes, of one
// of two refused, of one of two long prefixes the checker cut alike,
// and beyond what the publisher remembers of the refused, lose it
// nothing.
func TestRefusedStillWanted(t *testing.T) {
	long := strings.Repeat("L", 600)
	for _, tc := range []struct {
		name  string
		steps []string // "+p" subscribes to p, "-p" cancels it
		want  string   // a topic the subscriber still wants
	}{
		{"other refused", []string{"+a", "+b", "+c", "+d", "-c"}, "d"},
		{"held and unknown cancelled", []string{"+a", "+b", "+c", "-a", "-x"}, "c"},
		{"refused, then held", []string{"+a", "+b", "+c", "-a", "+c", "+d", "-c"}, "d"},
		{"two cut alike", []string{"+a", "+b", "+" + long + "1", "+" + long + "2", "-" + long + "1"}, long + "2"},
		{"beyond the refused kept", []string{"+a", "+b", "+c", "+d", "+e", "-c", "-d"}, "e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, ep := bound(t, Config{MaxSubscriptions: 2})
			_, zc := rawPeer(t, ep, zmq4.Sub)
			for _, s := range tc.steps {
				add := byte(0)
				if s[0] == '+' {
					add = 1
				}
				if err := zc.SendMsg(zmq4.NewMsg(append([]byte{add}, s[1:]...))); err != nil {
					t.Fatal(err)
				}
			}
			// Taken in order: once this is counted, every step was.
			if err := zc.SendMsg(zmq4.NewMsg([]byte{2})); err != nil {
				t.Fatal(err)
			}
			waitCount(t, "Ignored", func() uint64 { return pub.Stats().Ignored }, 1)
			if !pubSees(pub, tc.want) {
				t.Errorf("%q still wanted, no longer sent; publisher %+v", tc.want, pub.Stats())
			}
		})
	}
}
