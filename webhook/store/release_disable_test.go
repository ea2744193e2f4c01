package store

import (
	"context"
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
	ids := claimTwo(t, s, "b", t0)
	// The higher first by due time, and written last (then first in the
	// table's order, the lower's new version after it).
	dueHigherFirst(t, s, t0, ids)
	j := gone[0]
	released, completed := lockRace(t, s, ids[0], func() error { return s.Release(ctx, "b", ids) }, func() error {
		return s.Complete(ctx, &Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: StatusFailed, Disable: "410 Gone",
			Attempt: Attempt{ID: "atmpt_gone", DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_gone", Started: t0, StatusCode: 410}})
	})
	if err := released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being disabled: %v", err)
	}
	if err := completed; err != nil {
		t.Errorf("disabling an endpoint whose deliveries were being released: %v", err)
	}
	var paused int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE status = 'paused' AND lease_owner = ''`).Scan(&paused); err != nil || paused != 2 {
		t.Errorf("%d deliveries paused and released (%v), want 2", paused, err)
	}
}
