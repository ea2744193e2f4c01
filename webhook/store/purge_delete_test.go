package store

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestPurgeDeletingEndpoint: a purge of an endpoint's delivered events
// and a deletion of that endpoint at once both succeed: neither is
// killed as a deadlock (40P01). The deletion locks the endpoint's
// deliveries in id order, then deletes their attempts; here it waits on
// the lower, held by a third transaction, while the purge deletes the
// same events' attempts and deliveries.
func TestPurgeDeletingEndpoint(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_del", []string{"msg_1", "msg_2"}, "fsync=off", "deadlock_timeout=100ms")
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	ids := []string{jobs[0].Delivery.ID, jobs[1].Delivery.ID}
	sort.Strings(ids)
	// Both delivered, with an attempt each; the lower written last, so
	// a purge scanning the table comes to it second.
	for i, d := range []string{ids[1], ids[0]} {
		var ev string
		if err := s.db.QueryRowContext(ctx, `UPDATE deliveries SET status = 'succeeded', lease_owner = '', lease_until = 0 WHERE id = $1 RETURNING event_id`, d).Scan(&ev); err != nil {
			t.Fatal(err)
		}
		if _, err := s.exec(ctx, s.db, insertAttemptQuery, "atmpt_"+string(rune('1'+i)), d, ev, "ep_del", 0, 0, 200, "", []byte{}, StatusSucceeded); err != nil {
			t.Fatal(err)
		}
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
	deleted, purged := make(chan error, 1), make(chan error, 1)
	go func() { deleted <- s.DeleteEndpoint(ctx, "ep_del") }()
	waitLockWaiters(t, s, 1, deleted)
	go func() {
		_, err := s.Purge(ctx, t0.Add(time.Second), 10)
		purged <- err
	}()
	waitLockWaiters(t, s, 2, purged)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Errorf("deleting an endpoint while its events were purged: %v", err)
	}
	if err := <-purged; err != nil {
		t.Errorf("purging the events of an endpoint being deleted: %v", err)
	}
	var left int
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM attempts) + (SELECT COUNT(*) FROM deliveries) + (SELECT COUNT(*) FROM events)`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d attempts, deliveries and events left (%v), want none", left, err)
	}
}
