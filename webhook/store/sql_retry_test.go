package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// stateError is a database error with a SQLSTATE, as pgconn.PgError.
type stateError string

func (e stateError) Error() string    { return "state " + string(e) }
func (e stateError) SQLState() string { return string(e) }

// TestRetry: retry runs again only what the database killed as a
// deadlock's victim or a serialization failure, at most txTries times,
// and not once its context is done.
func TestRetry(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		runs int
	}{
		{"deadlock", context.Background(), stateError("40P01"), txTries},
		{"serialization", context.Background(), fmt.Errorf("store: %w", stateError("40001")), txTries},
		{"foreign key", context.Background(), stateError("23503"), 1},
		{"other", context.Background(), errors.New("x"), 1},
		{"context done", canceled, stateError("40P01"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			err := retry(tc.ctx, txTries, func() error { runs++; return tc.err })
			if runs != tc.runs || !errors.Is(err, tc.err) {
				t.Errorf("%d runs, %v; want %d, %v", runs, err, tc.runs, tc.err)
			}
		})
	}
	runs := 0
	if err := retry(context.Background(), txTries, func() error {
		if runs++; runs < 3 {
			return stateError("40P01")
		}
		return nil
	}); err != nil || runs != 3 {
		t.Errorf("%d runs, %v; want 3, nil", runs, err)
	}
}
