package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
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
	insertEvents(t, s, t0, events)
	return s, t0
}

// insertEvents inserts an event of each type-t id of events, created at
// t0.
func insertEvents(t *testing.T, s *sqlStore, t0 time.Time, events []string) {
	t.Helper()
	for _, id := range events {
		if _, err := s.InsertEvent(context.Background(), &Event{ID: id, Type: "t", Payload: []byte(`{}`), Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
}

// pgStoreAB is pgStore with endpoints ep_a and ep_b, so a delivery of
// each of events to each.
func pgStoreAB(t *testing.T, events []string, opts ...string) (*sqlStore, time.Time) {
	t.Helper()
	s, t0 := pgStore(t, "ep_a", nil, opts...)
	if err := s.CreateEndpoint(context.Background(), &Endpoint{ID: "ep_b", URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_b"}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	insertEvents(t, s, t0, events)
	return s, t0
}

// patientTx begins a transaction of s that detects no deadlock in time
// (its deadlock_timeout is an hour, so another is the victim), runs
// queries in it, and rolls it back at the test's end unless committed.
func patientTx(t *testing.T, s *sqlStore, queries ...string) *sql.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	for _, q := range append([]string{`SET LOCAL deadlock_timeout = '1h'`}, queries...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

// pgPlanStore is a store on a new database of a throwaway PostgreSQL
// cluster, analyzed, holding endpoints ep_0 to ep_3, events msg_1 to
// msg_10000 created at t0 (returned) and the deliveries that the
// statement deliveries inserts ($1: t0 in nanoseconds).
func pgPlanStore(t *testing.T, deliveries string) (*sqlStore, time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, pgtest.Start(t, "fsync=off").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := st.(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 4 {
		if err := s.CreateEndpoint(ctx, &Endpoint{ID: fmt.Sprint("ep_", i), URL: "http://127.0.0.1:1/", Enabled: true,
			Secrets: []Secret{{Secret: "whsec_p"}}, Created: t0, Updated: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO events (id, type, payload, idempotency_key, created) SELECT 'msg_' || g, 't', '', NULL, $1 FROM generate_series(1, 10000) g`,
		deliveries,
		`ANALYZE`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, t0.UnixNano())
		}
		if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
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

// claimTwo claims s's deliveries for owner at t0, failing the test
// unless it gets 2, and returns their ids in order.
func claimTwo(t *testing.T, s *sqlStore, owner string, t0 time.Time) []string {
	t.Helper()
	jobs, err := s.Claim(context.Background(), ClaimRequest{Owner: owner, Now: t0, Lease: time.Minute, Limit: 10})
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	ids := []string{jobs[0].Delivery.ID, jobs[1].Delivery.ID}
	sort.Strings(ids)
	return ids
}

// dueHigherFirst makes the higher of the deliveries ids (in order) due
// first, at t0, the lower a nanosecond later, writing the higher first.
func dueHigherFirst(t *testing.T, s *sqlStore, t0 time.Time, ids []string) {
	t.Helper()
	for i, d := range []string{ids[1], ids[0]} {
		if _, err := s.db.ExecContext(context.Background(), `UPDATE deliveries SET next_attempt = $1 WHERE id = $2`, nanos(t0)+int64(i), d); err != nil {
			t.Fatal(err)
		}
	}
}

// lockRace runs a lock-order test's race: a third transaction holds the
// delivery held FOR UPDATE while first, then second, wait on a lock;
// then it commits, and lockRace returns first's and second's errors
// (a deadlock's victim's 40P01 among them, s not running again).
func lockRace(t *testing.T, s *sqlStore, held string, first, second func() error) (error, error) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, `SELECT id FROM deliveries WHERE id = ? FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}
	a, b := make(chan error, 1), make(chan error, 1)
	go func() { a <- first() }()
	waitLockWaiters(t, s, 1, a)
	go func() { b <- second() }()
	waitLockWaiters(t, s, 2, b)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return <-a, <-b
}
