package store

import (
	"context"
	"testing"
)

// TestReturnRateSlotsDBClock: on PostgreSQL, measured by the database's
// clock (leaseByDB), a slot given back is taken again at once. (A rate
// of 1 a second, a second's burst: without it the next is a second
// away.)
func TestReturnRateSlotsDBClock(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_rate", nil, "fsync=off")
	if !s.leaseByDB {
		t.Fatal("PostgreSQL store not measuring slots by the database's clock")
	}
	for i, want := range []int{1, 1} {
		took, _, err := s.TakeRateSlots(ctx, "ep_rate", 1, 1, t0)
		if err != nil || took != want {
			t.Fatalf("take %d: took %d (%v), want %d", i, took, err, want)
		}
		if err := s.ReturnRateSlots(ctx, "ep_rate", 1, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
}
