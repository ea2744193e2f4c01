package multicast

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

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
// on a loaded machine (there it once read 39 times of 64 itself).
func TestReceiveReadsItself(t *testing.T) {
	cfg := testConfig(t)
	cfg.awayFor = time.Second
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
	if st.OwnReads < n-10 {
		t.Fatalf("Receive read %d times itself, of %d reads, for %d messages received one at a time (want at least %d)", st.OwnReads, st.Reads, n, n-10)
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
