package store

import (
	"context"
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
	ids := claimTwo(t, s, "b", t0)
	// The higher first by due time, and written last (then first in the
	// table's order, the lower's new version after it).
	dueHigherFirst(t, s, t0, ids)
	released, recovered := lockRace(t, s, ids[0], func() error { return s.Release(ctx, "b", ids) }, func() error {
		_, err := s.Recover(ctx, "ep_rec", t0.Add(-time.Hour), t0.Add(time.Hour), t0.Add(time.Second))
		return err
	})
	if err := released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being recovered: %v", err)
	}
	if err := recovered; err != nil {
		t.Errorf("recovering an endpoint whose deliveries were being released: %v", err)
	}
}
