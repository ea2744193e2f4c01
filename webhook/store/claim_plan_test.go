package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimReadsOnlyUnskippedEndpoints: the claim reaches deliveries only
// through the (endpoint_id, …) index, one endpoint at a time, so a
// skipped endpoint's backlog (a hanging endpoint's, at its concurrency)
// is never read: SQLite's plan for the claim has no scan of deliveries,
// no use of the (status, next_attempt) index, and searches them by
// endpoint_id.
func TestClaimReadsOnlyUnskippedEndpoints(t *testing.T) {
	ctx := context.Background()
	st, err := openSQLite(ctx, filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+claimQuery(s.d), 0, 0, 16, `["ep_hung"]`, 100, "owner", 0)
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
	text := strings.Join(plan, "\n")
	t.Logf("plan:\n%s", text)
	byEndpoint := false
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN x") || strings.HasPrefix(step, "SCAN d") || strings.HasPrefix(step, "SCAN deliveries") ||
			strings.Contains(step, "deliveries_due") {
			t.Errorf("the claim reads deliveries past their endpoint: %q", step)
		}
		if strings.Contains(step, "USING") && strings.Contains(step, "deliveries_endpoint_due (endpoint_id=?") {
			byEndpoint = true
		}
	}
	if !byEndpoint {
		t.Errorf("the claim does not search deliveries by endpoint")
	}
}
