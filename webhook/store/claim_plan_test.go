package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
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
	checkByEndpoint(t, sqlitePlan(t, nextDueQuery))
}
