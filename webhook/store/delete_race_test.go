package store

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store/pgtest"
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
	st, err := Open(ctx, pgtest.Start(t, "fsync=off").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := st.(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: "ep_del", URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_d"}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InsertEvent(ctx, &Event{ID: "msg_1", Type: "t", Payload: []byte(`{}`), Created: t0}); err != nil {
		t.Fatal(err)
	}
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
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-deleted:
			t.Fatalf("the deletion returned (%v) while a completion held the endpoint's delivery", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the deletion never waited for the completion")
		}
	}
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
