package kafka

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallsDuringRevokeCommitKeepTheirContext: while the commit before
// a rebalance waits for the broker (here held until the test releases
// it), Ack and Receive still return when their context ends: they do
// not wait for that commit, which only Close or the client's request
// timeouts end. An Ack that returns its context's error made no mark.
func TestCallsDuringRevokeCommitKeepTheirContext(t *testing.T) {
	addr, a, stream, inFlight, release := heldCommit(t, 1, time.Hour)
	ctx := context.Background()
	if err := a.Ack(ctx, stream, 8); err != nil {
		t.Fatal(err)
	}
	// A second member makes the group rebalance: a's session ends, and
	// its revocation commits what a marked, held by the broker.
	b, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "loss", Group: "g", Options: groupOpts})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wait(t, inFlight, "the revocation's commit")
	defer release()
	const patience = 300 * time.Millisecond
	calls := map[string]func(context.Context) error{
		"Ack":     func(ctx context.Context) error { return a.Ack(ctx, stream, 9) },
		"Receive": func(ctx context.Context) error { _, err := a.Receive(ctx); return err },
	}
	done := map[string]chan error{}
	start := time.Now()
	for name, call := range calls {
		cctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		ch := make(chan error, 1)
		done[name] = ch
		go func() { ch <- call(cctx) }()
	}
	limit := time.After(2 * time.Second)
	for name := range calls {
		select {
		case err := <-done[name]:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s during the revocation's commit: %v, want its context's deadline", name, err)
			}
			if d := time.Since(start); d > 3*patience {
				t.Errorf("%s returned after %v, its context ended after %v", name, d, patience)
			}
		case <-limit:
			limit = time.After(0)
			t.Errorf("%s still waiting 2s after its context (%v) ended: it waits for the revocation's commit", name, patience)
		}
	}
}
