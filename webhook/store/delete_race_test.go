package store

import (
	"context"
	"testing"
	"time"
)

// TestDeleteEndpointWaitsForItsDeliveries: a deletion of an endpoint
// waits for a transaction that wrote one of its deliveries and is about
// to record its attempt (a completion under way), then deletes that
// attempt with the rest; it never fails on the attempts' foreign key.
// The completion here holds its delivery without its endpoint's row
// (lockParents): the deletion must not rely on that lock alone, which
// storetest DeleteEndpointCompleting found wanting about once in 60 runs
// (GOMAXPROCS=1): the deletion took the endpoint's row, deleted the
// attempts, waited on a delivery whose attempt then committed, and its
// DELETE of the delivery failed on the foreign key (23503).
func TestDeleteEndpointWaitsForItsDeliveries(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_del", []string{"msg_1"}, "fsync=off")
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 1 {
		t.Fatal(jobs, err)
	}
	d := jobs[0].Delivery.ID
	// The completion: its delivery written, its attempt inserted, not
	// committed yet.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, `UPDATE deliveries SET status = 'succeeded', lease_owner = '', lease_until = 0 WHERE id = ?`, d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.exec(ctx, tx, insertAttemptQuery, "atmpt_1", d, "msg_1", "ep_del", 0, 0, 200, "", []byte{}, StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- s.DeleteEndpoint(ctx, "ep_del") }()
	// The deletion waits on the completion's delivery.
	waitLockWaiters(t, s, 1, deleted)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("deleting an endpoint while an attempt to it was recorded: %v", err)
	}
	var left int
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM attempts) + (SELECT COUNT(*) FROM deliveries)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d attempts and deliveries left (%v), want none", left, err)
	}
}
