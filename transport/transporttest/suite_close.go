package transporttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// closeDelay is how long after starting a Receive the suite closes or
// cancels it, so that the Receive is most likely blocked by then.
const closeDelay = 50 * time.Millisecond

// testCloseUnblocksReceive checks that Close unblocks a Receive pending in
// another goroutine with ErrClosed, that a second Close does not panic,
// and that Receive after Close returns ErrClosed.
func testCloseUnblocksReceive(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
	defer cancel()
	closed := make(chan error, 1)
	p.subClosed = true
	timer := time.AfterFunc(closeDelay, func() { closed <- within(prompt, p.Sub.Close) })
	defer timer.Stop()
	err := within(closeDelay+prompt, func() error { return drain(ctx, p.Sub) })
	switch {
	case errors.Is(err, errStillBlocked):
		t.Fatalf("Receive pending during Close: %v", err)
	case !errors.Is(err, transport.ErrClosed):
		t.Errorf("Receive pending during Close returned %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	secondClose(t, p.Sub.Close)
	err = within(prompt, func() error { _, err := p.Sub.Receive(ctx); return err })
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Receive after Close returned %v, want ErrClosed", err)
	}
}

// testClosePublisher checks that Publish and Flush on a closed publisher
// return ErrClosed and that a second Close does not panic.
func testClosePublisher(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	p.closePub(p.pub)
	ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
	defer cancel()
	if err := within(prompt, func() error { return p.pub.Publish(ctx, message(0, 64)) }); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Publish after Close returned %v, want ErrClosed", err)
	}
	if err := within(prompt, func() error { return p.pub.Flush(ctx) }); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Flush after Close returned %v, want ErrClosed", err)
	}
	secondClose(t, p.pub.Close)
}

// secondClose calls close again: it may return an error, but must
// neither block nor panic.
func secondClose(t *testing.T, close func() error) {
	t.Helper()
	err := within(prompt, close)
	switch {
	case errors.Is(err, errStillBlocked), errors.Is(err, errPanicked):
		t.Errorf("second Close %v", err)
	case err != nil:
		t.Logf("second Close: %v", err)
	}
}

// drain receives until Receive fails and returns its error. Events that
// arrive meanwhile (a heartbeat may start a stream) are dropped.
func drain(ctx context.Context, sub transport.Subscriber) error {
	for {
		if _, err := sub.Receive(ctx); err != nil {
			return err
		}
	}
}
