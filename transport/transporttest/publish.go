package transporttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// publishAsync publishes messages from..to-1, with payloads of size(i)
// bytes, and flushes, all from another goroutine, so the test can
// receive meanwhile (a transport may push back on a publisher whose
// subscriber does not read). The returned channel is closed when it is
// done; wait for it with awaitPublished. Failures are test errors.
func publishAsync(t *testing.T, pub transport.Publisher, from, to int, size func(int) int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
		defer cancel()
		if err := publishRange(ctx, pub, from, to, size); err != nil {
			t.Error(err)
		}
	}()
	return done
}

// publishRange publishes messages from..to-1 in order, then flushes.
func publishRange(ctx context.Context, pub transport.Publisher, from, to int, size func(int) int) error {
	for i := from; i < to; i++ {
		if err := pub.Publish(ctx, message(i, size(i))); err != nil {
			return fmt.Errorf("publish message %d: %w", i, err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		return fmt.Errorf("flush after message %d: %w", to-1, err)
	}
	return nil
}

// awaitPublished waits for a publishAsync to finish.
func awaitPublished(t *testing.T, done <-chan struct{}) {
	t.Helper()
	timer := time.NewTimer(receiveDeadline)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("publisher still publishing after %v", receiveDeadline)
	}
}

// fixedSize returns a size function giving every message n bytes.
func fixedSize(n int) func(int) int { return func(int) int { return n } }
