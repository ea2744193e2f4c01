package store

import (
	"context"
	"strings"
	"testing"
)

// TestLockParentsReadsByKeyPostgres: Complete's first statement
// (lockParents) reaches the deliveries it locks by their keys, those of
// its batch by id and the pending ones of an endpoint it disables by the
// (endpoint_id, status, …) index, not by scanning the deliveries table
// (every delivery ever made, until purged): 4 endpoints with 10,000
// deliveries each, 500 of them pending, and a batch of two
// completions, one of them disabling ep_0, or not.
func TestLockParentsReadsByKeyPostgres(t *testing.T) {
	s, _ := pgPlanStore(t, `INSERT INTO deliveries (id, event_id, endpoint_id, status, attempts, next_attempt, lease_owner, lease_until, last_code, created, updated)
			SELECT 'dlv_' || g || '_' || e, 'msg_' || g, 'ep_' || e, CASE WHEN g % 20 = 1 THEN 'pending' ELSE 'succeeded' END, 1,
				$1, '', 0, 500, $1, $1
			FROM generate_series(1, 10000) g, generate_series(0, 3) e`)
	for _, disable := range []string{"", "gone"} {
		cs := []*Completion{
			{Owner: "a", Status: StatusSucceeded, Attempt: Attempt{DeliveryID: "dlv_1_1", EventID: "msg_1", EndpointID: "ep_1"}},
			{Owner: "a", Status: StatusFailed, Disable: disable, Attempt: Attempt{DeliveryID: "dlv_21_0", EventID: "msg_21", EndpointID: "ep_0"}},
		}
		query, args := lockParentsQuery(s.d, cs)
		for _, step := range explainRolledBack(t, s, true, s.d.rebind(query), args...) {
			if strings.Contains(step, "Seq Scan on deliveries") {
				t.Errorf("disabling %q: lockParents scans the deliveries table: %q", disable, strings.TrimSpace(step))
			}
		}
	}
}

// explainRolledBack returns PostgreSQL's plan of query (its
// placeholders PostgreSQL's), with analyze run in a transaction rolled
// back, one step a line.
func explainRolledBack(t *testing.T, s *sqlStore, analyze bool, query string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	explain := "EXPLAIN "
	if analyze {
		explain = "EXPLAIN (ANALYZE, TIMING OFF) "
	}
	rows, err := tx.QueryContext(ctx, explain+query, args...)
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
	return plan
}
