package zmq

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// The ZMTP 3.1 heartbeats of libzmq (pyzmq) against ours. Staying
// connected is what these tests show, so they watch a connection for
// hbHold: there the time is the point, not a wait for an event.
const (
	hbHold  = 2 * time.Second
	hbLimit = 2 * time.Second // slack of a timeout's bound, for loaded machines and -race
)

// send writes a line to the python peer's stdin.
func (p *pyPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("python peer %v: %v: %s", p.cmd.Args[2:], err, p.stderr)
	}
}

// waitFor skips the peer's lines until one whose key is want (any value
// when want is nil), and returns it. A monitor event "disconnected" not
// waited for fails the test.
func (p *pyPeer) waitFor(key string, want any) map[string]any {
	p.t.Helper()
	return p.waitForWithin(testTimeout, key, want)
}

// waitForWithin is waitFor, failing the test if the line does not come
// within d.
func (p *pyPeer) waitForWithin(d time.Duration, key string, want any) map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		m := p.nextWithin(max(time.Until(deadline), 0))
		if v, ok := m[key]; ok && (want == nil || v == want) {
			return m
		}
		if m["event"] == "disconnected" {
			p.t.Fatalf("libzmq disconnected (%v) while waiting for %s %v", m, key, want)
		}
	}
}

// waitForAll is waitFor for several lines, in any order: libzmq's
// monitor events come on a socket of their own, so the connection's
// handshake_succeeded may be printed before or after what the connection
// carried.
func (p *pyPeer) waitForAll(want map[string]any) {
	p.t.Helper()
	deadline := time.Now().Add(testTimeout)
	left := maps.Clone(want)
	for len(left) > 0 {
		m := p.nextWithin(max(time.Until(deadline), 0))
		for k, v := range left {
			if got, ok := m[k]; ok && got == v {
				delete(left, k)
			}
		}
		if m["event"] == "disconnected" {
			p.t.Fatalf("libzmq disconnected (%v) while waiting for %v", m, left)
		}
	}
}

// hold watches the python peer for d: any line it prints (a monitor
// event: disconnected, closed, connect_retried ...; or a message) fails
// the test at once, and so does check, tried every 5 ms.
func (p *pyPeer) hold(d time.Duration, check func() error) {
	p.t.Helper()
	end := time.NewTimer(d)
	defer end.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				p.cmd.Wait()
				p.t.Fatalf("python peer %v ended: %s", p.cmd.Args[2:], p.stderr)
			}
			p.t.Fatalf("libzmq said %v while the connection should sit idle", m)
		case <-tick.C:
			if err := check(); err != nil {
				p.t.Fatal(err)
			}
		case <-end.C:
			return
		}
	}
}

// freeze stops the python peer (SIGSTOP): it answers nothing, and its
// connections stay open. It is let go (SIGCONT) at cleanup, before it
// is killed.
func (p *pyPeer) freeze() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { p.cmd.Process.Signal(syscall.SIGCONT) })
}

// waitTrue waits until cond holds.
func waitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitCount(t, what, func() uint64 {
		if cond() {
			return 1
		}
		return 0
	}, 1)
}

// urlConfig is the Config of a zmq+tcp URL with query.
func urlConfig(t *testing.T, query string) URLConfig {
	t.Helper()
	u, err := url.Parse(SchemeTCP + "://127.0.0.1:1?" + query)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return uc
}

// within fails the test unless elapsed is in [lo, hi].
func within(t *testing.T, what string, elapsed, lo, hi time.Duration) {
	t.Helper()
	t.Logf("%s after %v", what, elapsed.Round(time.Millisecond))
	if elapsed < lo || elapsed > hi {
		t.Errorf("%s after %v, want between %v and %v", what, elapsed, lo, hi)
	}
}

// relay forwards the TCP connections it accepts on 127.0.0.1 to a
// target. Silenced one way, it drops what that side sends from then on
// and keeps every connection open: the other side hears nothing more,
// as from a peer gone quiet, and the silenced side sees nothing amiss.
type relay struct {
	t      *testing.T
	ln     net.Listener
	target string
	// dropTarget drops what the target sends, dropClient what the
	// client sends.
	dropTarget, dropClient atomic.Bool
	// held, if set, holds what the client of the next connection
	// accepted sends until it is closed (holdNext).
	held  atomic.Pointer[chan struct{}]
	done  chan struct{} // closed at cleanup
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startRelay relays to target (tcp://HOST:PORT) until the test ends.
func startRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{t: t, ln: ln, target: strings.TrimPrefix(target, "tcp://"), done: make(chan struct{})}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() {
		close(r.done)
		ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

// endpoint is the relay's address, for the client.
func (r *relay) endpoint() string { return "tcp://" + r.ln.Addr().String() }

// holdNext holds what the client of the next connection sends (its
// greeting first) until release is called; the target's side is
// relayed meanwhile, and later connections are not held.
func (r *relay) holdNext() (release func()) {
	ch := make(chan struct{})
	r.held.Store(&ch)
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, u)
		r.mu.Unlock()
		var hold <-chan struct{}
		if ch := r.held.Swap(nil); ch != nil {
			hold = *ch
		}
		r.wg.Add(2)
		go func() {
			if hold != nil {
				select {
				case <-hold:
				case <-r.done:
				}
			}
			r.pipe(u, c, &r.dropClient)
		}()
		go r.pipe(c, u, &r.dropTarget)
	}
}

// pipe copies src to dst, unless drop; either side's end closes both.
func (r *relay) pipe(dst, src net.Conn, drop *atomic.Bool) {
	defer r.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !drop.Load() {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestInteropPyzmqSubHeartbeats: a libzmq SUB with ZMQ_HEARTBEAT_IVL
// 50 ms, _TIMEOUT 200 ms and _TTL 1 s, on our publisher, stays connected
// through hbHold (40 PINGs) of a connection carrying nothing but its
// PINGs and our PONGs (our own heartbeats off), and still receives:
// libzmq takes our PONGs. Then the relay between drops what we send,
// and libzmq does close the connection, within its timeout: its
// heartbeats were live, and only our PONGs kept it.
func TestInteropPyzmqSubHeartbeats(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{Heartbeat: -1})
	r := startRelay(t, ep)
	py := startPy(t, "hbsub", r.endpoint(), "50", "200", "1000")
	py.waitFor("event", "handshake_succeeded")
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	for i, payload := range []string{"before", "after"} {
		if err := pub.Publish(ctx, transport.Message{Topic: "t", Payload: []byte(payload)}); err != nil {
			t.Fatal(err)
		}
		py.waitFor("msg", payload)
		if i == 0 {
			py.hold(hbHold, func() error {
				if st := pub.Stats(); st.HeartbeatTimeouts != 0 || st.Accepted != 1 || pub.Subscribers() != 1 {
					return fmt.Errorf("stats %+v, %d subscribers: want one connection, never timed out", st, pub.Subscribers())
				}
				return nil
			})
		}
	}
	r.dropTarget.Store(true)
	start := time.Now()
	py.waitFor("event", "disconnected")
	within(t, "libzmq closed the connection to a silent peer", time.Since(start), 100*time.Millisecond, 250*time.Millisecond+hbLimit)
}

// TestInteropPyzmqPubHeartbeats: the same with the roles swapped: a
// libzmq XPUB with heartbeats on, and our subscriber connected to it.
func TestInteropPyzmqPubHeartbeats(t *testing.T) {
	py := startPy(t, "hbpub", "50", "200", "1000")
	r := startRelay(t, py.waitFor("endpoint", nil)["endpoint"].(string))
	sub := connected(t, r.endpoint(), Config{})
	// The monitor's handshake_succeeded may come after the
	// subscription, and must not come during the hold below.
	py.waitForAll(map[string]any{"subscribed": "", "event": "handshake_succeeded"})
	var first transport.Message
	for i, payload := range []string{"before", "after"} {
		py.send("send " + payload)
		py.waitFor("sent", payload)
		m := nextMessage(t, sub)
		if string(m.Payload) != payload || (i == 1 && (m.Stream != first.Stream || m.Seq != first.Seq+1)) {
			t.Fatalf("got %q stream %v seq %d after %q stream %v seq %d", m.Payload, m.Stream, m.Seq, first.Payload, first.Stream, first.Seq)
		}
		if i == 0 {
			first = m
			py.hold(hbHold, func() error {
				if st := sub.Stats(); st.HeartbeatTimeouts != 0 || st.Dialed != 1 || st.Publishers != 1 {
					return fmt.Errorf("stats %+v: want one connection, never timed out", st)
				}
				return nil
			})
		}
	}
	r.dropClient.Store(true)
	start := time.Now()
	py.waitFor("event", "disconnected")
	within(t, "libzmq closed the connection to a silent peer", time.Since(start), 100*time.Millisecond, 250*time.Millisecond+hbLimit)
}

// TestInteropPingPyzmqSub: our publisher with ping=50ms and
// pingtimeout=200ms (heartbeats of libzmq off): libzmq answers every
// PING, so through hbHold we time nothing out; once the python process
// is stopped (SIGSTOP, its connection still open), we close the
// connection within the interval and the timeout.
func TestInteropPingPyzmqSub(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, urlConfig(t, "ping=50ms&pingtimeout=200ms&heartbeat=off").PublisherConfig())
	py := startPy(t, "hbsub", ep, "0", "0", "0")
	py.waitFor("event", "handshake_succeeded")
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	py.hold(hbHold, func() error {
		if st := pub.Stats(); st.HeartbeatTimeouts != 0 || pub.Subscribers() != 1 {
			return fmt.Errorf("stats %+v, %d subscribers: libzmq answers our PINGs", st, pub.Subscribers())
		}
		return nil
	})
	py.freeze()
	start := time.Now()
	waitCount(t, "HeartbeatTimeouts", func() uint64 { return pub.Stats().HeartbeatTimeouts }, 1)
	within(t, "we timed out the stopped libzmq", time.Since(start), 100*time.Millisecond, 250*time.Millisecond+hbLimit)
	waitTrue(t, "no subscriber", func() bool { return pub.Subscribers() == 0 })
}

// TestInteropPingPyzmqPub: the same with our subscriber pinging a
// libzmq XPUB.
func TestInteropPingPyzmqPub(t *testing.T) {
	py := startPy(t, "hbpub", "0", "0", "0")
	sub := connected(t, py.waitFor("endpoint", nil)["endpoint"].(string), urlConfig(t, "ping=50ms&pingtimeout=200ms").SubscriberConfig())
	py.waitForAll(map[string]any{"subscribed": "", "event": "handshake_succeeded"})
	py.hold(hbHold, func() error {
		if st := sub.Stats(); st.HeartbeatTimeouts != 0 || st.Dialed != 1 || st.Publishers != 1 {
			return fmt.Errorf("stats %+v: libzmq answers our PINGs", st)
		}
		return nil
	})
	py.freeze()
	start := time.Now()
	waitCount(t, "HeartbeatTimeouts", func() uint64 { return sub.Stats().HeartbeatTimeouts }, 1)
	within(t, "we timed out the stopped libzmq", time.Since(start), 100*time.Millisecond, 250*time.Millisecond+hbLimit)
	waitTrue(t, "no publisher", func() bool { return sub.Publishers() == 0 })
}

// TestInteropPingTTLHonouredByPyzmq: our publisher's PINGs ask for a
// TTL of 500 ms (every 50 ms; our timeout a minute, so that we close
// nothing ourselves), and a libzmq SUB without heartbeats of its own
// keeps the connection while they come. The relay between then drops
// what we send, and libzmq closes the connection once the TTL of the
// last PING it got runs out: not at once, and not never.
func TestInteropPingTTLHonouredByPyzmq(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, urlConfig(t, "ping=50ms&pingtimeout=1m&pingttl=500ms&heartbeat=off").PublisherConfig())
	r := startRelay(t, ep)
	py := startPy(t, "hbsub", r.endpoint(), "0", "0", "0")
	py.waitFor("event", "handshake_succeeded")
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	py.hold(hbHold, func() error {
		if st := pub.Stats(); st.HeartbeatTimeouts != 0 || pub.Subscribers() != 1 {
			return fmt.Errorf("stats %+v, %d subscribers", st, pub.Subscribers())
		}
		return nil
	})
	r.dropTarget.Store(true)
	start := time.Now()
	py.waitForWithin(500*time.Millisecond+hbLimit, "event", "disconnected")
	// The last PING libzmq got left us at most an interval before the
	// relay went quiet (and scheduling may delay it further).
	within(t, "libzmq closed the connection past our TTL", time.Since(start), 300*time.Millisecond, 500*time.Millisecond+hbLimit)
	if st := pub.Stats(); st.HeartbeatTimeouts != 0 {
		t.Errorf("%d heartbeat timeouts: libzmq, not us, was to close it", st.HeartbeatTimeouts)
	}
}

// TestInteropPyzmqTTLHonoured: a libzmq SUB whose PINGs (every 100 ms)
// ask for a TTL of 1 s, on our publisher that sends no PINGs of its
// own: while the python process runs, its connection outlives the TTL
// twice over; once it is stopped (SIGSTOP), we close the connection
// when the TTL of its last PING runs out. (With a TTL of 500 ms a
// python process starved that long on a loaded machine was closed
// during the hold, as it should be.)
func TestInteropPyzmqTTLHonoured(t *testing.T) {
	ctx := testCtx(t)
	pub, ep := bound(t, Config{Heartbeat: -1})
	py := startPy(t, "hbsub", ep, "100", "400", "1000")
	py.waitFor("event", "handshake_succeeded")
	if err := pub.WaitSubscribers(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	py.hold(hbHold, func() error {
		if st := pub.Stats(); st.HeartbeatTimeouts != 0 || pub.Subscribers() != 1 {
			return fmt.Errorf("stats %+v, %d subscribers", st, pub.Subscribers())
		}
		return nil
	})
	py.freeze()
	start := time.Now()
	waitCount(t, "HeartbeatTimeouts", func() uint64 { return pub.Stats().HeartbeatTimeouts }, 1)
	within(t, "we closed the connection past libzmq's TTL", time.Since(start), 800*time.Millisecond, time.Second+hbLimit)
	waitTrue(t, "no subscriber", func() bool { return pub.Subscribers() == 0 })
}
