package store

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// TestDeleteEndpointReleasing: a deletion of an endpoint and a release
// of two of its deliveries at once (a dispatcher giving back what it
// claimed of a rate-limited endpoint and took no slot for) both succeed:
// neither is killed as a deadlock (40P01). The deletion locks the
// endpoint's deliveries in id order; here it waits on the lower, held
// by a third transaction, while the release asks for both.
func TestDeleteEndpointReleasing(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, pgtest.Start(t, "fsync=off", "deadlock_timeout=100ms").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := st.(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: "ep_del", URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_d"}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"msg_1", "msg_2"} {
		if _, err := s.InsertEvent(ctx, &Event{ID: id, Type: "t", Payload: []byte(`{}`), Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Claim(ctx, ClaimRequest{Owner: "a", Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	ids := []string{jobs[0].Delivery.ID, jobs[1].Delivery.ID}
	sort.Strings(ids)
	// The lower written again: stored after the other, a release
	// scanning the table comes to it second.
	if _, err := s.db.ExecContext(ctx, `UPDATE deliveries SET updated = updated WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
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
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; {
			var waiting int
			if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d transactions waiting, want %d", waiting, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	deleted, released := make(chan error, 1), make(chan error, 1)
	go func() { deleted <- s.DeleteEndpoint(ctx, "ep_del") }()
	waitFor(1)
	go func() { released <- s.Release(ctx, "a", []string{ids[1], ids[0]}) }()
	waitFor(2)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Errorf("deleting an endpoint while its deliveries were released: %v", err)
	}
	if err := <-released; err != nil {
		t.Errorf("releasing deliveries of an endpoint being deleted: %v", err)
	}
}
