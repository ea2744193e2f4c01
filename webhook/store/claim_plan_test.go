package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sqlitePlan returns SQLite's query plan of query, one step a line.
func sqlitePlan(t *testing.T, query string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	st, err := openSQLite(ctx, filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.(*sqlStore).db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", strings.Join(plan, "\n"))
	return plan
}

// checkByEndpoint fails unless plan reads deliveries only through the
// (endpoint_id, …) index, one endpoint at a time.
func checkByEndpoint(t *testing.T, plan []string) {
	t.Helper()
	byEndpoint := false
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN x") || strings.HasPrefix(step, "SCAN d") || strings.HasPrefix(step, "SCAN deliveries") {
			t.Errorf("deliveries read past their endpoint: %q", step)
		}
		if strings.Contains(step, "USING") && strings.Contains(step, "deliveries_endpoint_due (endpoint_id=?") {
			byEndpoint = true
		}
	}
	if !byEndpoint {
		t.Errorf("deliveries not searched by endpoint")
	}
}

// TestClaimReadsOnlyUnskippedEndpoints: the claim reaches deliveries only
// through the (endpoint_id, …) index, one endpoint at a time, so a
// skipped endpoint's backlog (a hanging endpoint's, at its concurrency)
// is never read: SQLite's plan for the claim has no scan of deliveries
// and searches them by endpoint_id.
func TestClaimReadsOnlyUnskippedEndpoints(t *testing.T) {
	r := ClaimRequest{Owner: "owner", Limit: 100, PerEndpoint: 16, RateLimited: 16, RateRoom: map[string]int{"ep_rated": 2}, Skip: []string{"ep_hung"}}
	checkByEndpoint(t, sqlitePlan(t, claimQuery(sqliteDialect), claimArgs(sqliteDialect, r)...))
}

// TestNextDueByEndpoint: NextDue reads the pending deliveries endpoint by
// endpoint, not every delivery ever made, and of each endpoint only those
// due up to its first unleased one (a range of next_attempt), found in
// the index's order (no sort of them all).
func TestNextDueByEndpoint(t *testing.T) {
	plan := sqlitePlan(t, nextDueQuery(sqliteDialect), `["ep_1"]`)
	checkByEndpoint(t, plan)
	ranged := false
	for _, step := range plan {
		if strings.Contains(step, "TEMP B-TREE") {
			t.Errorf("pending deliveries sorted: %q", step)
		}
		ranged = ranged || strings.Contains(step, "deliveries_endpoint_due (endpoint_id=? AND status=? AND next_attempt<")
	}
	if !ranged {
		t.Errorf("every pending delivery of an endpoint read: no range of next_attempt")
	}
}

// pgClaimStore is a PostgreSQL store holding 2,000 due deliveries of
// one endpoint, created in one millisecond, and that millisecond.
func pgClaimStore(t *testing.T) (*sqlStore, time.Time) {
	t.Helper()
	events := make([]string, 2000)
	for i := range events {
		events[i] = NewID("msg", time.Unix(1_800_000_000, 0))
	}
	return pgStore(t, "ep_p", events, "fsync=off")
}

// explainClaim returns PostgreSQL's plan of the claim of r (run, with
// analyze, in a transaction rolled back), one step a line.
func explainClaim(t *testing.T, s *sqlStore, r ClaimRequest, analyze bool) []string {
	t.Helper()
	query, args := s.claimReturning(r)
	return explainRolledBack(t, s, analyze, query, args...)
}

// TestClaimPlanPostgres: PostgreSQL's claim reads the claimed deliveries'
// events and endpoints by their keys, not by scanning the tables (the
// claim's rows were once read back in a second statement, by a list of
// ids whose length the planner guessed at 100: it hashed whole tables,
// 1 ms a claim at 2,000 deliveries and growing with the outbox).
func TestClaimPlanPostgres(t *testing.T) {
	s, t0 := pgClaimStore(t)
	plan := explainClaim(t, s, ClaimRequest{Owner: "a", Now: t0.Add(time.Second), Lease: time.Minute, Limit: 36, PerEndpoint: 36}, false)
	for _, step := range plan {
		if strings.Contains(step, "Seq Scan on deliveries") || strings.Contains(step, "Seq Scan on events") {
			t.Errorf("the claim scans a table: %q", strings.TrimSpace(step))
		}
	}
}

// TestClaimLocksOnlyWhatItTakes: a claim asking for more of an endpoint
// than its limit locks no more rows than it takes (each locked row stays
// locked until the claim commits, skipped by other dispatchers' claims).
func TestClaimLocksOnlyWhatItTakes(t *testing.T) {
	s, t0 := pgClaimStore(t)
	plan := explainClaim(t, s, ClaimRequest{Owner: "a", Now: t0.Add(time.Second), Lease: time.Minute, Limit: 10, PerEndpoint: 160}, true)
	locks := -1
	for _, step := range plan {
		if i := strings.Index(step, "actual rows="); i >= 0 && strings.Contains(step, "LockRows") {
			if _, err := fmt.Sscanf(step[i+len("actual rows="):], "%d", &locks); err != nil {
				t.Fatalf("%q: %v", step, err)
			}
		}
	}
	if locks != 10 {
		t.Fatalf("the claim of 10 locked %d rows", locks)
	}
}

// TestClaimUpdatesInPlacePostgres: a claim of a batch (the dispatcher's
// default, 100) of deliveries stored one after the other writes each
// row's new version on the row's own page (a HOT update), not on
// another page with a new entry in each of the table's three indexes:
// the deliveries table leaves room on its pages for that. With a
// fillfactor of 70, 43 of the 100 were.
func TestClaimUpdatesInPlacePostgres(t *testing.T) {
	s, t0 := pgClaimStore(t)
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	query, args := s.claimReturning(ClaimRequest{Owner: "a", Now: t0.Add(time.Second), Lease: time.Minute, Limit: 100, PerEndpoint: 260})
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for rows.Next() {
		claimed++
	}
	rows.Close()
	if err := rows.Err(); err != nil || claimed != 100 {
		t.Fatalf("claimed %d: %v", claimed, err)
	}
	var updated, hot int
	if err := tx.QueryRowContext(ctx, `SELECT pg_stat_get_xact_tuples_updated(CAST('deliveries' AS regclass)),
		pg_stat_get_xact_tuples_hot_updated(CAST('deliveries' AS regclass))`).Scan(&updated, &hot); err != nil {
		t.Fatal(err)
	}
	if updated != 100 || hot != 100 {
		t.Fatalf("the claim of 100 updated %d rows, %d of them in place (HOT)", updated, hot)
	}
}

// TestNextDueReadsNoBacklogPostgres: NextDue, which an idle dispatcher
// asks at every poll, reads a few index pages, not every pending
// delivery of each endpoint (nor, as PostgreSQL planned it, the whole
// deliveries table): 20,000 deliveries waiting for a retry, 20,000
// succeeded and 200 of the waiting leased, over 4 endpoints. It read all
// 40,000 rows (1,144 pages, growing with the table) at every poll.
func TestNextDueReadsNoBacklogPostgres(t *testing.T) {
	ctx := context.Background()
	// Each event to each endpoint: the even ones succeeded, the odd
	// ones waiting for a retry in g seconds, the first 50 of those leased.
	s, t0 := pgPlanStore(t, `INSERT INTO deliveries (id, event_id, endpoint_id, status, attempts, next_attempt, lease_owner, lease_until, last_code, created, updated)
			SELECT 'dlv_' || g || '_' || e, 'msg_' || g, 'ep_' || e, CASE WHEN g % 2 = 0 THEN 'succeeded' ELSE 'pending' END, 1,
				$1 + g * 1000000000::bigint, CASE WHEN g < 100 THEN 'a' ELSE '' END, CASE WHEN g < 100 THEN $1 + 3600000000000 ELSE 0 END, 500, $1, $1
			FROM generate_series(1, 10000) g, generate_series(0, 3) e`)
	// The earliest: the first unleased delivery waiting (g = 101).
	if next, ok, err := s.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(101*time.Second)) {
		t.Fatalf("NextDue = %v %v %v, want %v", next, ok, err, t0.Add(101*time.Second))
	}
	rows, err := s.db.QueryContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) "+s.d.rebind(nextDueQuery(s.d)), `[]`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	pages := -1
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
		if i := strings.Index(line, "Buffers: shared hit="); i >= 0 && pages < 0 {
			if _, err := fmt.Sscanf(line[i+len("Buffers: shared hit="):], "%d", &pages); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", strings.Join(plan, "\n"))
	if pages < 0 || pages > 200 {
		t.Fatalf("NextDue read %d pages", pages)
	}
}
