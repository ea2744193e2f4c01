package store

import (
	"context"
	"testing"
	"time"
)

// TestReleaseDuringResend: a dispatcher releasing deliveries of an
// event (to two endpoints) that a user resends at once both succeed:
// neither is killed as a deadlock (40P01). The release locks its
// deliveries in id order; the resend writes the event's, here the
// higher first (the order it finds them in: its id is set here). A
// third transaction holds the lower while the release, then the resend,
// wait for it.
func TestReleaseDuringResend(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStoreAB(t, []string{"msg_1"}, "fsync=off", "deadlock_timeout=100ms")
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "b", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	// The higher id to ep_a, first by the (event, endpoint) key, and
	// written first (then first in the table's order too).
	ids := []string{"dlv_1", "dlv_2"}
	for _, q := range []string{`UPDATE deliveries SET id = 'dlv_2' WHERE endpoint_id = 'ep_a'`, `UPDATE deliveries SET id = 'dlv_1' WHERE endpoint_id = 'ep_b'`} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	released, resent := lockRace(t, s, ids[0], func() error { return s.Release(ctx, "b", ids) }, func() error {
		_, err := s.Resend(ctx, "msg_1", "", t0.Add(time.Second))
		return err
	})
	if err := released; err != nil {
		t.Errorf("releasing deliveries of an event being resent: %v", err)
	}
	if err := resent; err != nil {
		t.Errorf("resending an event whose deliveries were being released: %v", err)
	}
}
