package zmq

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/brokerless/brokerless/transport"
)

// flood publishes on pub until the test ends.
func flood(t *testing.T, pub *Publisher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pub.Publish(ctx, transport.Message{Topic: "t", Payload: make([]byte, 1024)})
		}
	}()
}

// TestPongNotHeldBackByBusyQueue: a PING from a subscriber whose queue
// is full (the publisher dropping for it) is answered: the PONG does not
// go through the queue's bounds, and comes ahead of data queued later.
// The writer now sends it before its next batch; the former writer sent
// it only once idle, and passes this test too, as its queue empties
// between batches here.
func TestPongNotHeldBackByBusyQueue(t *testing.T) {
	pub, ep := bound(t, Config{SubscriberQueue: 64, Heartbeat: -1})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1})); err != nil { // subscribe to everything
		t.Fatal(err)
	}
	flood(t, pub)
	waitCount(t, "Dropped", func() uint64 { return pub.Stats().Dropped }, 1) // its queue is full
	if _, err := c.Write(command("PING", []byte{0, 0, 'b', 'u', 's', 'y'})); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(testTimeout))
	// What the socket buffers and the queue held before the PING may
	// come first; then the PONG, ahead of anything queued later.
	const limit = 50000
	for n := 0; n < limit; n++ {
		msg, err := zc.RecvMsg()
		if err != nil {
			t.Fatal(err)
		}
		if msg.Type == zmq4.CmdMsg {
			if len(msg.Frames) != 1 || string(msg.Frames[0]) != "busy" {
				t.Fatalf("got command %q, want a PONG with context busy", msg.Frames)
			}
			t.Logf("PONG after %d messages", n)
			return
		}
	}
	t.Fatalf("no PONG in %d messages of a busy queue", limit)
}

// TestPingFloodCoalesced: a peer that floods PINGs without reading gets
// at most one PONG owed at a time: every PING is answered or counted as
// coalesced, the last PONG echoes the last PING's context (at most 16
// bytes of it, as libzmq), and the connection carries on.
func TestPingFloodCoalesced(t *testing.T) {
	pub, ep := bound(t, Config{Heartbeat: -1})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	const n = 20000
	var pings []byte
	for i := range n - 1 {
		pings = append(pings, command("PING", fmt.Appendf([]byte{0, 0}, "%d", i))...)
	}
	last := []byte("the-last-context-is-long")
	pings = append(pings, command("PING", append([]byte{0, 0}, last...))...)
	if _, err := c.Write(pings); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(testTimeout))
	pongs := 0
	for {
		msg, err := zc.RecvMsg()
		if err != nil {
			t.Fatal(err)
		}
		if msg.Type != zmq4.CmdMsg {
			continue
		}
		pongs++
		if len(msg.Frames) == 1 && bytes.Equal(msg.Frames[0], last[:maxPingContext]) {
			break
		}
	}
	st := pub.Stats()
	t.Logf("%d PINGs: %d PONGs, %d coalesced", n, pongs, st.PongsCoalesced)
	if uint64(pongs)+st.PongsCoalesced != n {
		t.Errorf("%d PONGs + %d coalesced, want %d PINGs", pongs, st.PongsCoalesced, n)
	}
	if st.PongsCoalesced == 0 {
		t.Errorf("no PONG coalesced for %d PINGs sent at once", n)
	}
	if pub.Subscribers() != 1 || st.HeartbeatTimeouts != 0 {
		t.Errorf("subscribers %d, heartbeat timeouts %d: the connection should carry on", pub.Subscribers(), st.HeartbeatTimeouts)
	}
}

// TestPingTimeout: with PingInterval set, a peer that answers (zmq4
// sends a PONG for each PING it reads) stays connected; one that sends
// nothing is disconnected after PingTimeout.
func TestPingTimeout(t *testing.T) {
	pub, ep := bound(t, Config{Heartbeat: -1, PingInterval: 10 * time.Millisecond, PingTimeout: 100 * time.Millisecond, PingTTL: 2 * time.Second})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	c.SetReadDeadline(time.Now().Add(testTimeout))
	for pings := 0; pings < 20; {
		msg, err := zc.RecvMsg() // answers a PING
		if err != nil {
			t.Fatalf("after %d PINGs: %v", pings, err)
		}
		if msg.Type == zmq4.CmdMsg {
			if len(msg.Frames) != 1 || !bytes.Equal(msg.Frames[0], []byte{0, 20}) {
				t.Fatalf("PING body %q, want TTL 20 (2s)", msg.Frames)
			}
			pings++
		}
	}
	if st := pub.Stats(); st.HeartbeatTimeouts != 0 {
		t.Fatalf("an answering peer: %d heartbeat timeouts", st.HeartbeatTimeouts)
	}
	c.Close()

	silent, _ := rawPeer(t, ep, zmq4.Sub)
	waitCount(t, "HeartbeatTimeouts", func() uint64 { return pub.Stats().HeartbeatTimeouts }, 1)
	silent.SetReadDeadline(time.Now().Add(testTimeout))
	buf := make([]byte, 1<<10)
	for {
		if _, err := silent.Read(buf); err != nil {
			break // closed by the publisher
		}
	}
}

// TestPingTTLHonoured: a peer's PING asking for a TTL makes us close
// the connection when nothing more comes from it within the TTL, even
// though we send no PINGs of our own.
func TestPingTTLHonoured(t *testing.T) {
	pub, ep := bound(t, Config{Heartbeat: -1})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	if _, err := c.Write(command("PING", []byte{0, 1})); err != nil { // TTL 100ms
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(testTimeout))
	if _, err := zc.RecvMsg(); err != nil { // the PONG
		t.Fatal(err)
	}
	waitCount(t, "HeartbeatTimeouts", func() uint64 { return pub.Stats().HeartbeatTimeouts }, 1)
	if _, err := zc.RecvMsg(); err == nil {
		t.Fatal("the connection is still open after its TTL")
	}
}

// TestPingTimeoutNotOurSilence: a subscriber whose application does not
// read, so that its reader waits for room in its receive queue, does
// not take its publisher for dead: the PONGs it does not read are
// behind data it has not read either.
func TestPingTimeoutNotOurSilence(t *testing.T) {
	pub, ep := bound(t, Config{SubscriberQueue: 16, Heartbeat: -1})
	sub := connected(t, ep, Config{ReceiveQueue: 1, PingInterval: 5 * time.Millisecond, PingTimeout: 50 * time.Millisecond})
	waitCount(t, "Subscribers", func() uint64 { return uint64(pub.Subscribers()) }, 1)
	flood(t, pub)
	waitCount(t, "Dropped", func() uint64 { return pub.Stats().Dropped }, 1) // the subscriber is full
	time.Sleep(300 * time.Millisecond)                                       // 6 PingTimeouts: a timeout, if any, would have fired
	if st := sub.Stats(); st.HeartbeatTimeouts != 0 {
		t.Fatalf("%d heartbeat timeouts of a publisher the subscriber did not read", st.HeartbeatTimeouts)
	}
	nextMessage(t, sub)
}

// TestPingTimeoutDataCounts: a peer that sends data but never answers
// our PINGs (it never reads them) is not taken for dead: anything that
// arrives counts. Once it falls silent, it is disconnected, no sooner
// than PingTimeout after the last thing it sent.
func TestPingTimeoutDataCounts(t *testing.T) {
	const timeout = 100 * time.Millisecond
	pub, ep := bound(t, Config{Heartbeat: -1, PingInterval: 5 * time.Millisecond, PingTimeout: timeout})
	c, zc := rawPeer(t, ep, zmq4.Sub)
	var pinged atomic.Int64 // bytes of PINGs read, 9 each: nothing else comes
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		buf := make([]byte, 1<<10)
		for {
			n, err := c.Read(buf)
			pinged.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	stop := make(chan struct{})
	var stopOnce sync.Once
	t.Cleanup(func() { stopOnce.Do(func() { close(stop) }) })
	sent := make(chan time.Time, 1) // when the last data began to be sent
	go func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var last time.Time
		for i := 0; ; i++ {
			select {
			case <-stop:
				sent <- last
				return
			case <-tick.C:
			}
			last = time.Now()
			if zc.SendMsg(zmq4.NewMsg([]byte{byte(i % 2), 'x'})) != nil { // (un)subscribe
				sent <- last
				return
			}
		}
	}()
	const pings = 120 // 6 timeouts
	for pinged.Load()/9 < pings {
		select {
		case <-closed:
			t.Fatalf("a peer sending data every 2ms disconnected after %d PINGs (%d heartbeat timeouts)", pinged.Load()/9, pub.Stats().HeartbeatTimeouts)
		case <-time.After(5 * time.Millisecond):
		}
	}
	stopOnce.Do(func() { close(stop) })
	last := <-sent
	if st := pub.Stats(); st.HeartbeatTimeouts != 0 {
		t.Fatalf("a peer sending data every 2ms: %d heartbeat timeouts in %d PINGs", st.HeartbeatTimeouts, pings)
	}
	waitCount(t, "HeartbeatTimeouts", func() uint64 { return pub.Stats().HeartbeatTimeouts }, 1)
	select {
	case <-closed:
	case <-time.After(testTimeout):
		t.Fatal("the connection of a silent peer is still open")
	}
	if since := time.Since(last); since < timeout {
		t.Errorf("disconnected %v after its last data, before PingTimeout %v", since, timeout)
	} else {
		t.Logf("disconnected %v after its last data", since)
	}
}
