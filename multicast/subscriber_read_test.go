package multicast

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// receiveIndex receives the next message and returns its index.
func receiveIndex(t *testing.T, s *Subscriber) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == transport.EventMessage {
			return indexOf(ev.Message.Payload)
		}
	}
}

// TestReceiveReadsItself: a Receive that finds nothing ready while
// nobody reads the socket reads it itself, so that a datagram reaches
// the application without a hand-off from the reader goroutine (which
// woke a second thread per datagram). One message at a time, each
// published only once the previous one was received: after the first
// (the reader goroutine reads first, until a Receive asks for the
// role), Receive reads every one itself. When the application stays
// away, the reader goroutine reads again, and hands its events over in
// order. The application may stay away for a second (not the
// default's millisecond), which no paced loop exceeds even under -race
// on a loaded machine (there it once read 39 times of 64 itself), and
// the receiver sends no STATUS: its 20 ms timer, too, gave the reader
// goroutine the role (the engine's next timer bounds the wait), as
// often as the loop took 20 ms, up to 18 reads of 62 under -race with
// four CPU hogs; without it, at most 5 of the reader goroutine's own.
// When the reader goroutine handed the loop's last message over, the
// second part failed: nothing read again (TestRoleGivenBackWhileAway).
// In a CI run under -race, with the other packages' tests on the same
// two cores, it read only 20 times of 58 itself: the test asks for a
// fifth of the messages, which a Receive that never reads (0) fails.
func TestReceiveReadsItself(t *testing.T) {
	cfg := testConfig(t)
	cfg.awayFor = time.Second
	cfg.Receiver.StatusInterval = -1
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	ctx := context.Background()
	const n = 50
	for i := range n {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
			t.Fatal(err)
		}
		if got := receiveIndex(t, s); got != i {
			t.Fatalf("message %d has index %d", i, got)
		}
	}
	st := s.Stats()
	t.Logf("phase 1: %d reads, %d own", st.Reads, st.OwnReads)
	if st.OwnReads < n/5 {
		t.Fatalf("Receive read %d times itself, of %d reads, for %d messages received one at a time (want at least %d)", st.OwnReads, st.Reads, n, n/5)
	}

	// Away from Receive: the reader goroutine takes the role back.
	for i := n; i < 2*n; i++ {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := s.Stats()
		if now.Reads-now.OwnReads > st.Reads-st.OwnReads && now.Delivered >= 2*n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the application away, the reader goroutine read nothing: %d reads, %d its own, %d messages delivered", now.Reads, now.OwnReads, now.Delivered)
		}
		runtime.Gosched()
	}
	for i := n; i < 2*n; i++ {
		if got := receiveIndex(t, s); got != i {
			t.Fatalf("message %d has index %d", i, got)
		}
	}
}

// TestReceiveReadingHonoursContext: a Receive reading for itself, with
// nothing to read and no timer in the engine (no stream yet), returns
// when its context ends, and the subscriber still delivers afterwards;
// Close ends a Receive that reads.
func TestReceiveReadingHonoursContext(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			_, err := s.Receive(ctx)
			done <- err
		}()
		waitReceiveErr(t, done, 5*time.Second, context.DeadlineExceeded, "Receive with nothing to read")
		cancel()
	}
	if s.Stats().OwnReads == 0 {
		t.Fatalf("Receive never read itself: %+v", s.Stats())
	}
	p := mustPub(t, cfg)
	if err := p.Publish(context.Background(), transport.Message{Payload: indexed(7, 64)}); err != nil {
		t.Fatal(err)
	}
	if got := receiveIndex(t, s); got != 7 {
		t.Fatalf("got index %d, want 7", got)
	}

	reads := s.Stats().OwnReads
	done := make(chan error, 1)
	go func() {
		_, err := s.Receive(context.Background())
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); s.Stats().OwnReads == reads; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the last Receive did not read itself within 10 s")
		}
	}
	s.Close()
	waitReceiveErr(t, done, 10*time.Second, transport.ErrClosed, "Receive reading for itself, after Close")
}

// waitReceiveErr waits up to within for the error of a Receive on done
// and fails unless it is want.
func waitReceiveErr(t *testing.T, done <-chan error, within time.Duration, want error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	case <-time.After(within):
		t.Fatalf("%s: still waiting %v later", what, within)
	}
}

// TestReceiveContextEndNeverLost: a context that ends while a Receive
// reading for itself sets its read deadline (no stream, so no timer:
// the deadline it sets is none) still ends that Receive. Many Receives
// with contexts ending after a few microseconds hit that moment; the
// wake-up was once overwritten there, and the Receive slept in the read
// until a datagram came — for good on a quiet group.
func TestReceiveContextEndNeverLost(t *testing.T) {
	s := mustSub(t, testConfig(t))
	for i := range 2000 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%50)*time.Microsecond)
		done := make(chan error, 1)
		go func() {
			_, err := s.Receive(ctx)
			done <- err
		}()
		waitReceiveErr(t, done, 5*time.Second, context.DeadlineExceeded, fmt.Sprintf("Receive %d, its context ended", i))
		cancel()
	}
}

// endedCtx is a context that ends after the first look at its error
// and whose Done channel, closed already, it shares with others: as
// the runtime's timer contexts do when they end before Done was first
// called (they then return one closed channel, the same for all).
type endedCtx struct {
	context.Context
	done  chan struct{}
	looks int
}

func (c *endedCtx) Done() <-chan struct{} { return c.done }

func (c *endedCtx) Err() error {
	if c.looks++; c.looks == 1 {
		return nil
	}
	return context.Canceled
}

// TestReceiveContextEndedSharedDone: two Receives, reading for
// themselves, whose contexts end between Receive's first look at the
// error and its wait, with the same closed Done channel. The
// subscriber, which keeps its wake-up registered for the last Done
// channel, once took the second for one it had registered: nothing
// woke its read, and the Receive slept until a datagram came
// (TestReceiveContextEndNeverLost found it under -race, 1 in 2000).
// No publisher: a stream's timers would end the read anyway.
func TestReceiveContextEndedSharedDone(t *testing.T) {
	cfg := testConfig(t)
	cfg.awayFor = time.Hour // the role stays idle between the Receives
	s := mustSub(t, cfg)
	for s.Stats().OwnReads == 0 { // the first Receives take the role
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := s.Receive(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Receive with nothing to read: %v", err)
		}
	}
	closed := make(chan struct{})
	close(closed)
	ended := func(what string) {
		done := make(chan error, 1)
		go func() {
			_, err := s.Receive(&endedCtx{Context: context.Background(), done: closed})
			done <- err
		}()
		waitReceiveErr(t, done, 5*time.Second, context.Canceled, what)
	}
	// The first registers its wake-up; the second, if that wake-up
	// came after the first's read, takes it; the third has none left.
	for i := range 3 {
		time.Sleep(10 * time.Millisecond) // the wake-ups registered have run
		ended(fmt.Sprintf("Receive %d, its context ended", i))
	}
}

// TestRoleGivenBackWhileAway: the reader goroutine, holding the role,
// hands a batch over to a Receive that asked for the role while it
// handled the datagram; the Receive takes the batch, not the role, and
// the application stays away. The reader goroutine, which gave the role
// up, must still read what comes next (the away timer). It once did
// not arm the timer there: nothing more was read until the next
// Receive, and TestReceiveReadsItself failed on a loaded machine.
// The gate filter holds the reader goroutine in the first DATA
// datagram until that Receive waits for the role, so the order is
// forced, not hoped for.
func TestRoleGivenBackWhileAway(t *testing.T) {
	cfg := testConfig(t)
	g := &gateFilter{held: make(chan struct{}), release: make(chan struct{})}
	cfg.Filter = func() (DatagramFilter, error) { return g, nil }
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	ctx := context.Background()
	if err := p.Publish(ctx, transport.Message{Payload: indexed(0, 64)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.held: // the reader goroutine, which reads first, is in Push
	case <-time.After(10 * time.Second):
		t.Fatal("the first DATA datagram never reached the filter")
	}
	got := make(chan int, 1)
	go func() { got <- receiveIndex(t, s) }()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		s.rmu.Lock()
		waiting := s.appWaiting
		s.rmu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Receive did not ask for the role within 10 s")
		}
	}
	close(g.release)
	if i := <-got; i != 0 {
		t.Fatalf("got index %d, want 0", i)
	}
	if own := s.Stats().OwnReads; own != 0 {
		t.Fatalf("Receive read %d times itself: the order this test forces did not happen", own)
	}

	// The application away: the next messages are read all the same.
	const n = 10
	for i := 1; i < n; i++ {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); s.Stats().Delivered < n; runtime.Gosched() {
		if time.Now().After(deadline) {
			st := s.Stats()
			t.Fatalf("the application away after a batch handed over, nothing read: %d reads, %d delivered of %d", st.Reads, st.Delivered, n)
		}
	}
	for i := 1; i < n; i++ {
		if got := receiveIndex(t, s); got != i {
			t.Fatalf("message %d has index %d", i, got)
		}
	}
}

// gateFilter keeps every datagram and hands it on at once, but holds
// the goroutine that pushes the first DATA datagram (signalling held)
// until release is closed.
type gateFilter struct {
	held, release chan struct{}
	gated         bool
	queue         [][]byte
	from          []netip.AddrPort
}

func (g *gateFilter) Push(_ time.Time, b []byte, from netip.AddrPort) bool {
	if h, err := reliable.ParseHeader(b); !g.gated && err == nil && h.Type == reliable.TypeData {
		g.gated = true
		close(g.held)
		<-g.release
	}
	g.queue = append(g.queue, append([]byte(nil), b...))
	g.from = append(g.from, from)
	return true
}

func (g *gateFilter) Pop(time.Time) ([]byte, netip.AddrPort, bool) {
	if len(g.queue) == 0 {
		return nil, netip.AddrPort{}, false
	}
	b, from := g.queue[0], g.from[0]
	g.queue, g.from = g.queue[1:], g.from[1:]
	return b, from, true
}

func (g *gateFilter) NextDue() (time.Time, bool) {
	if len(g.queue) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, 0), true
}
