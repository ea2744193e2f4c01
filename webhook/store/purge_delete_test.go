package store

import (
	"context"
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
	ids := claimTwo(t, s, "a", t0)
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
	deleted, purged := lockRace(t, s, ids[0], func() error { return s.DeleteEndpoint(ctx, "ep_del") }, func() error {
		_, err := s.Purge(ctx, t0.Add(time.Second), 10)
		return err
	})
	if err := deleted; err != nil {
		t.Errorf("deleting an endpoint while its events were purged: %v", err)
	}
	if err := purged; err != nil {
		t.Errorf("purging the events of an endpoint being deleted: %v", err)
	}
	var left int
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM attempts) + (SELECT COUNT(*) FROM deliveries) + (SELECT COUNT(*) FROM events)`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d attempts, deliveries and events left (%v), want none", left, err)
	}
}
