package store

import (
	"context"
	"testing"
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
	ids := claimTwo(t, s, "a", t0)
	// The lower written again: stored after the other, a release
	// scanning the table comes to it second.
	if _, err := s.db.ExecContext(ctx, `UPDATE deliveries SET updated = updated WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	// A third transaction holds the lower (a resend, a completion).
	deleted, released := lockRace(t, s, ids[0], func() error { return s.DeleteEndpoint(ctx, "ep_del") },
		func() error { return s.Release(ctx, "a", []string{ids[1], ids[0]}) })
	if err := deleted; err != nil {
		t.Errorf("deleting an endpoint while its deliveries were released: %v", err)
	}
	if err := released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being deleted: %v", err)
	}
}
