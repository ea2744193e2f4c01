package transporttest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// testContextCancel checks that Receive returns context.Canceled at once
// for a cancelled context and promptly when its context is cancelled
// while it waits, that Publish with a cancelled context does not block,
// and that the subscriber still delivers afterwards.
func testContextCancel(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	err := within(prompt, func() error { return drain(cancelled, p.Sub) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive with a cancelled context returned %v, want context.Canceled", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	timer := time.AfterFunc(closeDelay, cancel)
	defer timer.Stop()
	err = within(closeDelay+prompt, func() error { return drain(ctx, p.Sub) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive whose context was cancelled while it waited returned %v, want context.Canceled", err)
	}

	err = within(prompt, func() error { return p.pub.Publish(cancelled, message(1, 64)) })
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with a cancelled context returned %v, want nil or context.Canceled", err)
	}

	done := publishAsync(t, p.pub, 2, 3, fixedSize(64))
	r := newRecorder(t, h, p.Sub)
	r.collect(done, r.idle, waitFor(false, 2))
	awaitPublished(t, done)
	report(t, r.events, CheckAccounting(r.events, false))
	for _, ev := range r.events {
		if idx, err := PayloadIndex(ev.Message.Payload); err == nil && idx == 2 {
			return
		}
	}
	t.Errorf("subscriber did not deliver a message published after its Receive was cancelled (%s)", summary(r.events))
}
