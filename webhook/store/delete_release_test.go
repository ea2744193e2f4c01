package store

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestDeleteEndpointReleasing: a deletion of an endpoint and a release
// of two of its deliveries at once (a dispatcher giving back what it
// claimed of a rate-limited endpoint and took no slot for) both succeed:
// neither is killed as a deadlock (40P01). The deletion locks the
// endpoint's deliveries in id order; here it waits on the lower, held
// by a third transaction, while the release asks for both.
func TestDeleteEndpointReleasing(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_del", []string{"msg_1", "msg_2"}, "fsync=off", "deadlock_timeout=100ms")
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	ids := []string{jobs[0].Delivery.ID, jobs[1].Delivery.ID}
	sort.Strings(ids)
	// The lower written again: stored after the other, a release
	// scanning the table comes to it second.
	if _, err := s.db.ExecContext(ctx, `UPDATE deliveries SET updated = updated WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	// A third transaction holds the lower (a resend, a completion).
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, `SELECT id FROM deliveries WHERE id = ? FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}
	deleted, released := make(chan error, 1), make(chan error, 1)
	go func() { deleted <- s.DeleteEndpoint(ctx, "ep_del") }()
	waitLockWaiters(t, s, 1, deleted)
	go func() { released <- s.Release(ctx, "a", []string{ids[1], ids[0]}) }()
	waitLockWaiters(t, s, 2, released)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Errorf("deleting an endpoint while its deliveries were released: %v", err)
	}
	if err := <-released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being deleted: %v", err)
	}
}
