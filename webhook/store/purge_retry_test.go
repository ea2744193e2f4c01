package store

import (
	"context"
	"testing"
	"time"
)

// TestPurgeRetryCountsOnlyItsRun: a purge killed as a deadlock's victim
// after it deleted some rows, and run again, returns what the run that
// committed deleted, not what the killed one had counted. Here the
// killed run waits, deleting the event (a trigger asks for a lock a
// third transaction holds), and that transaction then asks for the
// event's row, which the purge holds: the purge, whose session alone
// detects deadlocks in time, is killed; run again, it finds the event
// locked (SKIP LOCKED) and deletes nothing.
func TestPurgeRetryCountsOnlyItsRun(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_p", []string{"msg_1"}, "fsync=off", "deadlock_timeout=100ms")
	s.tries = txTries
	for _, q := range []string{
		`UPDATE deliveries SET status = 'succeeded'`,
		`CREATE FUNCTION wait_for_test() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(7); RETURN NULL; END $$`,
		`CREATE TRIGGER events_delete BEFORE DELETE ON events FOR EACH STATEMENT EXECUTE FUNCTION wait_for_test()`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx := patientTx(t, s, `SELECT pg_advisory_xact_lock(7)`)
	type result struct {
		n   int
		err error
	}
	purged, early, locked := make(chan result, 1), make(chan error, 1), make(chan error, 1)
	go func() {
		n, err := s.Purge(ctx, t0.Add(time.Second), 10)
		purged <- result{n, err}
		early <- err
	}()
	waitLockWaiters(t, s, 1, early)
	go func() {
		_, err := tx.ExecContext(ctx, `SELECT id FROM events WHERE id = 'msg_1' FOR UPDATE`)
		locked <- err
	}()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	r := <-purged
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if r.err != nil || r.n != 1-left {
		t.Fatalf("purge killed once as a deadlock's victim, then run again: returned %d (%v), %d of 1 events left; want %d", r.n, r.err, left, 1-left)
	}
}
