package store

import (
	"context"
	"sort"
	"testing"
	"time"
)

// TestPurgeEnablingEndpoint: a purge of a disabled endpoint's events
// (its deliveries paused, so purgeable) and the endpoint enabled again
// at once both succeed: neither is killed as a deadlock (40P01). The
// purge locks the events' deliveries in id order; the update of the
// endpoint pauses or resumes its deliveries, which locks them too,
// here the higher first (the order it finds them in). A third
// transaction holds the lower while the purge, then the update, wait
// for it.
func TestPurgeEnablingEndpoint(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_up", []string{"msg_1", "msg_2"}, "fsync=off", "deadlock_timeout=100ms")
	e, err := s.GetEndpoint(ctx, "ep_up")
	if err != nil {
		t.Fatal(err)
	}
	e.Enabled = false
	if err := s.UpdateEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	var ids []string
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM deliveries WHERE status = 'paused' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = scanIDs(rows); err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	sort.Strings(ids)
	// The higher first by due time, and written last (then first in the
	// table's order, the lower's new version last).
	dueHigherFirst(t, s, t0, ids)
	purged, enabled := lockRace(t, s, ids[0], func() error {
		_, err := s.Purge(ctx, t0.Add(time.Second), 10)
		return err
	}, func() error {
		e.Enabled = true
		return s.UpdateEndpoint(ctx, e)
	})
	if err := purged; err != nil {
		t.Errorf("purging the events of an endpoint being enabled: %v", err)
	}
	if err := enabled; err != nil {
		t.Errorf("enabling an endpoint while its events were purged: %v", err)
	}
}
