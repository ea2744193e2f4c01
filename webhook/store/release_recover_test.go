package store

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestReleaseDuringRecover: a dispatcher releasing deliveries of an
// endpoint whose user asks at once for a Recover (which marks the
// endpoint's deliveries being attempted, recover_at) both succeed:
// neither is killed as a deadlock (40P01). The release locks its
// deliveries in id order; the Recover marks them, here the higher
// first (the order it finds them in). A third transaction holds the
// lower while the release, then the Recover, wait for it.
func TestReleaseDuringRecover(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_rec", []string{"msg_1", "msg_2"}, "fsync=off", "deadlock_timeout=100ms")
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
	released, recovered := make(chan error, 1), make(chan error, 1)
	go func() { released <- s.Release(ctx, "b", ids) }()
	waitLockWaiters(t, s, 1, released)
	go func() {
		_, err := s.Recover(ctx, "ep_rec", t0.Add(-time.Hour), t0.Add(time.Hour), t0.Add(time.Second))
		recovered <- err
	}()
	waitLockWaiters(t, s, 2, recovered)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being recovered: %v", err)
	}
	if err := <-recovered; err != nil {
		t.Errorf("recovering an endpoint whose deliveries were being released: %v", err)
	}
}
