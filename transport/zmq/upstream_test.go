package zmq

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// The tests in this file pin down limits of go-zeromq/zmq4 v0.17.0 that
// this package works around and that cannot be fixed without changing
// the library. Each drives zmq4's own sockets and asserts what v0.17.0
// does, so `go test ./...` stays green while the limit is there; its
// comment says what zmq4 should do instead (what libzmq does). When
// zmq4 changes, the test fails, saying the workaround here can be
// revisited. With BROKERLESS_UPSTREAM=1 each asserts the correct
// behaviour instead and fails while the limit is there: the failing test
// to attach to an upstream report.

// upstreamLimit checks one limit: limited is whether zmq4 behaved as
// v0.17.0 does, observed how it was seen.
func upstreamLimit(t *testing.T, limited bool, issue, observed string) {
	t.Helper()
	switch {
	case os.Getenv("BROKERLESS_UPSTREAM") == "1" && limited:
		t.Errorf("go-zeromq/zmq4 %s: %s", issue, observed)
	case !limited:
		t.Errorf("go-zeromq/zmq4 no longer has the limit of %s (%s): revisit the workaround in this package and this test", issue, observed)
	default:
		t.Logf("go-zeromq/zmq4 %s, as in v0.17.0: %s", issue, observed)
	}
}

func zmq4Endpoint(s zmq4.Socket) string {
	return "tcp://" + s.Addr().(*net.TCPAddr).String()
}

// recvWithin is Recv on another goroutine, since zmq4's Recv takes no
// deadline (#37, #74). The goroutine ends when s is closed.
func recvWithin(s zmq4.Socket, d time.Duration) (zmq4.Msg, bool) {
	ch := make(chan zmq4.Msg, 1)
	go func() {
		m, err := s.Recv()
		if err == nil {
			ch <- m
		}
	}()
	select {
	case m := <-ch:
		return m, true
	case <-time.After(d):
		return zmq4.Msg{}, false
	}
}

// TestUpstreamSharedPubQueue (#151): a zmq4 PUB has one queue and one
// writer goroutine for all its subscribers, which writes to each in
// turn. Once one subscriber stops reading and its TCP buffers are full,
// the writer blocks on it: every other subscriber stops receiving, and
// the queue grows without bound (the default HWM is 0). zmq4 should
// queue per subscriber, as libzmq does, and drop for the slow one at its SNDHWM:
// the fast subscriber would then receive all 200 messages.
func TestUpstreamSharedPubQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := zmq4.NewPub(ctx)
	if err := pub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ep := zmq4Endpoint(pub)
	fast := zmq4.NewSub(ctx)
	defer fast.Close()
	if err := fast.Dial(ep); err != nil {
		t.Fatal(err)
	}
	fast.SetOption(zmq4.OptionSubscribe, "")
	var got atomic.Int64
	go func() {
		for {
			if _, err := fast.Recv(); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	// The fast subscriber receives while it is alone.
	payload := make([]byte, 64<<10)
	for got.Load() == 0 {
		pub.Send(zmq4.NewMsgFrom([]byte("t"), payload))
		time.Sleep(time.Millisecond) // pacing, not waiting for an event
	}
	// The stalled subscriber takes topic "t" only (the fast one takes
	// everything), so that its subscription is seen in place.
	stalled := stalledSubscriberOf(t, ep, "t")
	for !slices.Contains(pub.(zmq4.Topics).Topics(), "t") {
		time.Sleep(time.Millisecond) // zmq4 says nothing when a subscription arrives
	}
	// 200 more messages of 64 KiB (12.8 MB) cannot all fit in the
	// stalled subscriber's socket buffers.
	base := got.Load()
	deadline := time.Now().Add(3 * time.Second)
	sent := 0
	for got.Load()-base < 200 && time.Now().Before(deadline) {
		pub.Send(zmq4.NewMsgFrom([]byte("t"), payload))
		sent++
		time.Sleep(time.Millisecond)
	}
	n := got.Load() - base
	stalled.Close() // frees the writer
	upstreamLimit(t, n < 200, "#151",
		fmt.Sprintf("with one subscriber stalled, the fast one received %d of %d messages of 64 KiB sent in 3 s", n, sent))
}

// stalledSubscriberOf is stalledSubscriber subscribed to topic only.
func stalledSubscriberOf(t *testing.T, ep, topic string) net.Conn {
	t.Helper()
	e, err := parseEndpoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	c, err := d.Dial(e.network, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	zc, err := zmq4.Open(c, null.Security(), zmq4.Sub, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := zc.SendMsg(zmq4.NewMsg(append([]byte{1}, topic...))); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUpstreamXPubSubscriptions (#108, #136): a zmq4 XPUB handles its
// subscribers' subscriptions itself and never returns them from Recv,
// so an XSUB/XPUB proxy built on it forwards no subscription upstream.
// zmq4 should return each subscription message (\x01 + prefix) from
// XPUB.Recv, as libzmq's XPUB does, at least the first for a prefix.
func TestUpstreamXPubSubscriptions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	xpub := zmq4.NewXPub(ctx)
	defer xpub.Close()
	if err := xpub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial(zmq4Endpoint(xpub)); err != nil {
		t.Fatal(err)
	}
	sub.SetOption(zmq4.OptionSubscribe, "prices.")
	// The subscription has reached the XPUB once what it publishes on
	// the topic arrives.
	arrived := make(chan struct{})
	go func() {
		if _, err := sub.Recv(); err == nil {
			close(arrived)
		}
	}()
	for took := false; !took; {
		xpub.Send(zmq4.NewMsgFrom([]byte("prices.x"), []byte("p")))
		select {
		case <-arrived:
			took = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	m, ok := recvWithin(xpub, 500*time.Millisecond)
	upstreamLimit(t, !ok, "#108, #136",
		fmt.Sprintf("XPUB.Recv returned nothing in 500 ms after a subscription to \"prices.\" took effect (returned: %v %q)", ok, m.Frames))
}

// TestUpstreamPushRoundRobin (#158): a zmq4 PUSH sends every message to
// every connected PULL peer. It should send each to one peer, in turn,
// as libzmq does: 10 messages to 2 peers should arrive 10 times, not 20.
func TestUpstreamPushRoundRobin(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	push := zmq4.NewPush(ctx)
	defer push.Close()
	var got atomic.Int64
	for range 2 {
		p := zmq4.NewPull(ctx)
		defer p.Close()
		if err := p.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				if _, err := p.Recv(); err != nil {
					return
				}
				got.Add(1)
			}
		}()
		// Dial returns once the PUSH holds the connection.
		if err := push.Dial(zmq4Endpoint(p)); err != nil {
			t.Fatal(err)
		}
	}
	const n = 10
	for range n {
		if err := push.Send(zmq4.NewMsgString("task")); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for 2n arrivals, or long enough to be sure there are no more
	// than n.
	deadline := time.Now().Add(time.Second)
	for got.Load() < 2*n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	total := got.Load()
	upstreamLimit(t, total == 2*n, "#158", fmt.Sprintf("%d messages pushed to 2 PULL peers arrived %d times", n, total))
}

// TestUpstreamRecvDeadline (#37, #74): a zmq4 socket's Recv takes no
// context or deadline, and WithTimeout does not bound it: with nothing
// to receive it blocks until the socket's own context is cancelled,
// which closes the socket. Recv should take a context (or honour
// WithTimeout) and return its error, the socket staying usable.
func TestUpstreamRecvDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := zmq4.NewSub(ctx, zmq4.WithTimeout(100*time.Millisecond))
	defer sub.Close()
	if err := sub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		sub.Recv()
		close(done)
	}()
	var blocked bool
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		blocked = true
		cancel() // the only way out: the socket's own context, which closes it
		<-done
	}
	upstreamLimit(t, blocked, "#37, #74", fmt.Sprintf("Recv with WithTimeout(100ms) and nothing to receive still blocked after 2 s: %v", blocked))
}

// TestUpstreamRedialsLastEndpoint: a zmq4 socket with automatic
// reconnect keeps one endpoint, the last it dialled; when any of its
// connections closes it redials that one. A SUB connected to A then B
// that loses A dials B a second time and never A again. It should
// redial the endpoint whose connection closed (libzmq redials each
// connected endpoint, with ZMQ_RECONNECT_IVL backoff).
//
// zmq4's reconnect also races: a connection that closes calls
// scheduleRmConn from its reading goroutine, which calls Dial, which
// writes the socket's endpoint with no lock; two connections closing at
// once (as when the socket closes) race on it. The race detector reports
// that as a failure of whichever test makes zmq4 reconnect, so this one
// runs in the pass without -race only (CI runs both).
func TestUpstreamRedialsLastEndpoint(t *testing.T) {
	if raceEnabled {
		t.Skip("go-zeromq/zmq4 v0.17.0's reconnect writes socket.ep unlocked from each closing connection's goroutine (scheduleRmConn → Dial): the race detector would report zmq4's race; this test runs without -race")
	}
	type accepted struct {
		who  string
		conn net.Conn
	}
	acc := make(chan accepted, 8)
	listen := func(who string) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					if _, err := zmq4.Open(c, null.Security(), zmq4.Pub, nil, true, nil); err == nil {
						acc <- accepted{who, c}
					}
				}()
			}
		}()
		return "tcp://" + l.Addr().String()
	}
	epA, epB := listen("A"), listen("B")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub := zmq4.NewSub(ctx, zmq4.WithAutomaticReconnect(true), zmq4.WithDialerRetry(10*time.Millisecond))
	defer sub.Close()
	conns := map[string]net.Conn{}
	for _, ep := range []string{epA, epB} {
		if err := sub.Dial(ep); err != nil {
			t.Fatal(err)
		}
		a := <-acc
		defer a.conn.Close()
		conns[a.who] = a.conn
	}
	conns["A"].Close()
	timeout := time.After(5 * time.Second)
	var redial string
	select {
	case a := <-acc:
		defer a.conn.Close()
		redial = a.who
	case <-timeout:
		redial = "none in 5 s"
	}
	upstreamLimit(t, redial == "B", "(redial of the last endpoint only)",
		fmt.Sprintf("a SUB connected to A then B lost A and redialled: %s", redial))
}

// TestUpstreamMetadataPanics: zmq4's Metadata.UnmarshalZMTP (the READY
// command's properties) checks a property's name length against the
// whole buffer, not what is left of it, and reads the value length past
// the end: a peer's truncated READY panics the process (reading the
// connection's goroutine). It should return io.ErrUnexpectedEOF. This
// package refuses such a READY before zmq4 reads it (wireconn.go).
func TestUpstreamMetadataPanics(t *testing.T) {
	var md zmq4.Metadata = map[string]string{}
	panicked := func() (p any) {
		defer func() { p = recover() }()
		md.UnmarshalZMTP([]byte{2, 'S', 'o'}) // name "So", then no value length
		return nil
	}()
	upstreamLimit(t, panicked != nil, "(no issue filed yet; report drafted)",
		fmt.Sprintf("Metadata.UnmarshalZMTP of a truncated property panicked: %v", panicked))
}

// TestUpstreamUnknownSocketType: zmq4.Open panics ("unknown
// socket-type") when a peer's READY names a socket type it does not
// know, so any peer can crash a zmq4 process. It should fail the
// handshake with an error. This package refuses such a READY before zmq4
// reads it (wireconn.go).
func TestUpstreamUnknownSocketType(t *testing.T) {
	panicked := func() (p any) {
		defer func() { p = recover() }()
		zmq4.Open(newPipeConn(append(greeting(), ready("NOPE")...)), null.Security(), zmq4.Sub, nil, false, nil)
		return nil
	}()
	upstreamLimit(t, panicked != nil, "(no issue filed yet; report drafted)",
		fmt.Sprintf("Open with a peer whose READY names Socket-Type NOPE panicked: %v", panicked))
}
