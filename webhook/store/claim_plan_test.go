package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store/pgtest"
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
	checkByEndpoint(t, sqlitePlan(t, claimQuery(sqliteDialect), 0, 0, 16, `["ep_hung"]`, 100, "owner", 0))
}

// TestNextDueByEndpoint: NextDue reads the pending deliveries endpoint by
// endpoint, not every delivery ever made.
func TestNextDueByEndpoint(t *testing.T) {
	checkByEndpoint(t, sqlitePlan(t, nextDueQuery(sqliteDialect), `["ep_1"]`))
}

// TestClaimPlanPostgres: PostgreSQL's claim reads the claimed deliveries'
// events and endpoints by their keys, not by scanning the tables (the
// claim's rows were once read back in a second statement, by a list of
// ids whose length the planner guessed at 100: it hashed whole tables,
// 1 ms a claim at 2,000 deliveries and growing with the outbox).
func TestClaimPlanPostgres(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, pgtest.Start(t, "fsync=off").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: "ep_p", URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_p"}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		if _, err := s.InsertEvent(ctx, &Event{ID: NewID("msg", t0), Type: "t", Payload: []byte(`{}`), Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
	now := nanos(t0.Add(time.Second))
	rows, err := s.db.QueryContext(ctx, "EXPLAIN "+s.d.rebind(claimReturningQuery(s.d)), now, now, 36, "[]", 36, "a", now+1e9)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", strings.Join(plan, "\n"))
	for _, step := range plan {
		if strings.Contains(step, "Seq Scan on deliveries") || strings.Contains(step, "Seq Scan on events") {
			t.Errorf("the claim scans a table: %q", strings.TrimSpace(step))
		}
	}
}
