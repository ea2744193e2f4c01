package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNewIDOrder: IDs made in one millisecond sort in the order they
// were made, and are distinct; the next millisecond's sort after them.
func TestNewIDOrder(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var ids []string
	for range 1000 {
		ids = append(ids, NewID("dlv", now))
	}
	ids = append(ids, NewID("dlv", now.Add(time.Millisecond)))
	for i, id := range ids {
		if len(id) != len("dlv_")+26 || !strings.HasPrefix(id, "dlv_") {
			t.Fatalf("id %d: %q", i, id)
		}
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("id %d %q made after %q sorts before it (or equals it)", i, id, ids[i-1])
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatal("not sorted")
	}
}

// walFrames returns how many pages the SQLite store s wrote to its
// write-ahead log since the last call, and empties the log.
func walFrames(t *testing.T, s *sqlStore) int {
	t.Helper()
	var busy, log, done int
	for _, mode := range []string{"PASSIVE", "TRUNCATE"} {
		n := log
		if err := s.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		log = max(n, log)
	}
	return log
}

// TestClaimTouchesFewPages: a burst of events stored in one millisecond
// (each event's delivery id made then) is claimed and completed in the
// order it was stored, so a claim of 36 deliveries writes the few pages
// holding them, and their completion few more, not a page or more per
// row (with random ids within the millisecond: 25 and 54 pages).
func TestClaimTouchesFewPages(t *testing.T) {
	ctx := context.Background()
	st, err := openSQLite(ctx, filepath.Join(t.TempDir(), "pages.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	t0 := time.Unix(1_800_000_000, 0)
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: "ep_p", URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_p"}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if _, err := s.InsertEvent(ctx, &Event{ID: NewID("msg", t0), Type: "t", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)), Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
	owner := NewID("dispatcher", t0)
	now := t0.Add(time.Second)
	for round := range 3 {
		walFrames(t, s)
		jobs, err := s.Claim(ctx, ClaimRequest{Owner: owner, Now: now, Lease: time.Minute, Limit: 36})
		if err != nil || len(jobs) != 36 {
			t.Fatalf("claimed %d: %v", len(jobs), err)
		}
		claimed := walFrames(t, s)
		cs := make([]*Completion, len(jobs))
		for i, j := range jobs {
			cs[i] = &Completion{Owner: owner, LeaseUntil: j.LeaseUntil, Status: StatusSucceeded, EndpointOK: true,
				Attempt: Attempt{ID: NewID("atmpt", now), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
					Started: now, Duration: time.Millisecond, StatusCode: 204}}
		}
		if err := s.Complete(ctx, cs...); err != nil {
			t.Fatal(err)
		}
		completed := walFrames(t, s)
		t.Logf("round %d: the claim wrote %d pages, the completion %d", round, claimed, completed)
		if claimed > 8 || completed > 30 {
			t.Errorf("round %d: the claim of 36 wrote %d pages (want at most 8), their completion %d (want at most 30)", round, claimed, completed)
		}
	}
}
