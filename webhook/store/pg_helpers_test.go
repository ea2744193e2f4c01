package store

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// pgStore is a store on a new database of a throwaway PostgreSQL
// cluster started with the settings opts, holding endpoint ep and an
// event of each of events (so a delivery of each), all created at the
// time it returns. It runs each transaction once (see NoRetry): a
// deadlock fails the test.
func pgStore(t *testing.T, ep string, events []string, opts ...string) (*sqlStore, time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, pgtest.Start(t, opts...).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := NoRetry(st).(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: ep, URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_" + ep}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	for _, id := range events {
		if _, err := s.InsertEvent(ctx, &Event{ID: id, Type: "t", Payload: []byte(`{}`), Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
	return s, t0
}

// waitLockWaiters waits until n transactions of s's database wait on a
// lock, failing the test after 30 s, or if early (nil: none) delivers
// first: what was to wait returned instead.
func waitLockWaiters(t *testing.T, s *sqlStore, n int, early <-chan error) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions waiting on a lock after 30s, want %d", waiting, n)
		}
		select {
		case err := <-early:
			t.Fatalf("returned (%v) before %d transactions waited on a lock", err, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
