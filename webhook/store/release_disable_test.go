package store

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestReleaseDuringDisable: a dispatcher releasing deliveries of an
// endpoint that another's completion disables at once (pausing the
// endpoint's pending deliveries, those leased included) both succeed:
// neither is killed as a deadlock (40P01). The release locks its
// deliveries in id order; the completion pauses them, here the higher
// first (the order it finds them in). A third transaction holds the
// lower while the release, then the completion, wait for it.
func TestReleaseDuringDisable(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_gone", []string{"msg_1", "msg_2", "msg_3"}, "fsync=off", "deadlock_timeout=100ms")
	gone, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 1})
	if err != nil || len(gone) != 1 {
		t.Fatal(gone, err)
	}
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "b", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	ids := []string{jobs[0].Delivery.ID, jobs[1].Delivery.ID}
	sort.Strings(ids)
	// The higher first by due time, and written last (then first in the
	// table's order, the lower's new version after it).
	for i, d := range []string{ids[1], ids[0]} {
		if _, err := s.db.ExecContext(ctx, `UPDATE deliveries SET next_attempt = $1 WHERE id = $2`, nanos(t0)+int64(i), d); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, `SELECT id FROM deliveries WHERE id = ? FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}
	released, completed := make(chan error, 1), make(chan error, 1)
	go func() { released <- s.Release(ctx, "b", ids) }()
	waitLockWaiters(t, s, 1, released)
	j := gone[0]
	go func() {
		completed <- s.Complete(ctx, &Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: StatusFailed, Disable: "410 Gone",
			Attempt: Attempt{ID: "atmpt_gone", DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_gone", Started: t0, StatusCode: 410}})
	}()
	waitLockWaiters(t, s, 2, completed)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being disabled: %v", err)
	}
	if err := <-completed; err != nil {
		t.Errorf("disabling an endpoint whose deliveries were being released: %v", err)
	}
	var paused int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE status = 'paused' AND lease_owner = ''`).Scan(&paused); err != nil || paused != 2 {
		t.Errorf("%d deliveries paused and released (%v), want 2", paused, err)
	}
}
