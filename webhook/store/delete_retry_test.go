package store

import (
	"context"
	"testing"
	"time"
)

// TestDeleteEndpointRetriesDeadlock: a deletion of an endpoint killed
// as a deadlock's victim (40P01) is run again, and succeeds. A third
// transaction holds one of the endpoint's deliveries, which the
// deletion, holding the endpoint's row, waits for; it then asks for the
// endpoint's row. Only the deletion's session detects deadlocks in
// time (the other's deadlock_timeout is an hour), so it is the victim.
func TestDeleteEndpointRetriesDeadlock(t *testing.T) {
	ctx := context.Background()
	s, _ := pgStore(t, "ep_del", []string{"msg_1"}, "fsync=off", "deadlock_timeout=100ms")
	s.tries = txTries
	tx := patientTx(t, s, `SELECT id FROM deliveries WHERE endpoint_id = 'ep_del' FOR UPDATE`)
	deleted, locked := make(chan error, 1), make(chan error, 1)
	go func() { deleted <- s.DeleteEndpoint(ctx, "ep_del") }()
	waitLockWaiters(t, s, 1, deleted)
	go func() {
		_, err := tx.ExecContext(ctx, `SELECT id FROM endpoints WHERE id = 'ep_del' FOR UPDATE`)
		locked <- err
	}()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	// The deletion, killed, runs again and waits for the endpoint's row.
	waitLockWaiters(t, s, 1, deleted)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatalf("deleting an endpoint killed once as a deadlock's victim: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("deletion still running 30s after the other transaction committed")
	}
	if _, err := s.GetEndpoint(ctx, "ep_del"); err == nil {
		t.Fatal("endpoint still there after its deletion")
	}
}
