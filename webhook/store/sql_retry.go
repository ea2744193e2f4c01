package store

import (
	"context"
	"errors"
	"time"
)

// txTries bounds the runs of one transaction killed by the database as
// a deadlock's victim or a serialization failure (retryable): a
// store's tries.
const txTries = 5

// txRetryWait is the wait before the second run; it doubles at each
// run after.
const txRetryWait = 5 * time.Millisecond

// retryable reports whether err is PostgreSQL killing a transaction
// that may succeed when run again: a deadlock detected (40P01), its
// victim rolled back so the others go on, or a serialization failure
// (40001).
func retryable(err error) bool {
	var state interface{ SQLState() string }
	if !errors.As(err, &state) {
		return false
	}
	code := state.SQLState()
	return code == "40P01" || code == "40001"
}

// retry runs f, and again while it fails retryable, at most tries
// times, waiting txRetryWait (doubled each time) between runs; it stops
// waiting when ctx is done. It returns f's last error: without it, a
// user's DeleteEndpoint killed as a deadlock's victim (its rows locked
// in the same order as the others', but a completion or a test holding
// one and asking for its endpoint's row) failed with a database error
// where the same request a moment later succeeds. f runs a whole
// transaction, and sets what it returns from scratch at each run.
func retry(ctx context.Context, tries int, f func() error) error {
	wait := txRetryWait
	for try := 1; ; try++ {
		err := f()
		if err == nil || try >= tries || !retryable(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}
