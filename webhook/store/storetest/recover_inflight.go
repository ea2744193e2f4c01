package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testRecoverInFlight: a Recover of an endpoint's failed deliveries
// while attempts of others in its window are under way (pending, leased)
// covers those too, should they fail: an attempt that then fails for
// good (recorded alone, or in a batch, which PostgreSQL writes in bulk)
// leaves its delivery pending, due at the recover's time, with a new
// schedule; one that succeeds, or fails with retries left, keeps its
// result. An attempt begun after the Recover is not covered.
func testRecoverInFlight(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	for i := range 6 {
		event(t, s, fmt.Sprint("msg_", i), "t", t0)
	}
	jobs := map[string]*store.Job{}
	for _, j := range claim(t, s, "a", t0, 10) {
		jobs[j.Event.ID] = j
	}
	if len(jobs) != 6 {
		t.Fatalf("claimed %d, want 6", len(jobs))
	}
	recovered := t0.Add(time.Second)
	if _, err := s.Recover(c, "ep_1", t0.Add(-time.Hour), t0.Add(time.Hour), recovered); err != nil {
		t.Fatal(err)
	}
	done := func(ev, status string, code int) *store.Completion {
		j := jobs[ev]
		return &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: status, NextAttempt: t0.Add(time.Hour), EndpointOK: status == store.StatusSucceeded,
			Attempt: store.Attempt{ID: "atmpt_" + ev, DeliveryID: j.Delivery.ID, EventID: ev, EndpointID: "ep_1", Started: t0, Duration: time.Second, StatusCode: code}}
	}
	batches := [][]*store.Completion{
		{done("msg_0", store.StatusFailed, 500)},
		{done("msg_1", store.StatusSucceeded, 200)},
		{done("msg_2", store.StatusPending, 503)},
		{done("msg_3", store.StatusFailed, 410), done("msg_4", store.StatusSucceeded, 204), done("msg_5", store.StatusFailed, 500)},
	}
	for _, cs := range batches {
		if err := s.Complete(c, cs...); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"msg_0": store.StatusPending, "msg_1": store.StatusSucceeded, "msg_2": store.StatusPending,
		"msg_3": store.StatusPending, "msg_4": store.StatusSucceeded, "msg_5": store.StatusPending}
	for _, cs := range batches {
		for _, cp := range cs {
			ev := cp.Attempt.EventID
			ds, err := s.ListDeliveries(c, ev)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries of %s: %+v %v", ev, ds, err)
			}
			d := ds[0]
			recover := cp.Status == store.StatusFailed
			if d.Status != want[ev] {
				t.Errorf("%s, its attempt under way at the recover, then %s: %s, want %s", ev, cp.Status, d.Status, want[ev])
			}
			if recover && (d.Attempts != 0 || !d.NextAttempt.Equal(recovered) || !cp.Resent) {
				t.Errorf("%s recovered: %d attempts, due %v, Resent %v; want 0, due %v, Resent", ev, d.Attempts, d.NextAttempt, cp.Resent, recovered)
			}
			if !recover && (d.Attempts != 1 || cp.Resent) {
				t.Errorf("%s not to recover: %d attempts, Resent %v; want 1, not resent", ev, d.Attempts, cp.Resent)
			}
			if as, err := s.ListAttempts(c, ev); err != nil || len(as) != 1 {
				t.Errorf("attempts of %s: %d %v, want 1", ev, len(as), err)
			}
		}
	}
	// Attempted again and failed for good: that attempt began after the
	// recover, and its failure stands.
	again := claim(t, s, "a", recovered, 10)
	if got := jobIDs(again); !slices.Equal(got, []string{"msg_0>ep_1", "msg_3>ep_1", "msg_5>ep_1"}) {
		t.Fatalf("claimed %v after the attempts, want the three recovered", got)
	}
	for _, j := range again {
		jobs[j.Event.ID] = j
		cp := done(j.Event.ID, store.StatusFailed, 500)
		cp.Attempt.ID += "_again"
		if err := s.Complete(c, cp); err != nil {
			t.Fatal(err)
		}
		ds, _ := s.ListDeliveries(c, j.Event.ID)
		if ds[0].Status != store.StatusFailed || cp.Resent {
			t.Errorf("%s failed again after its recovery: %s (Resent %v), want failed", j.Event.ID, ds[0].Status, cp.Resent)
		}
	}

	// Taken over by b after a's lease expired: a's attempt, which the
	// recover covered, is refused, and b's failure, begun after it, stands.
	later := t0.Add(10 * time.Minute)
	event(t, s, "msg_6", "t", later)
	ja := claim(t, s, "a", later, 10)
	if len(ja) != 1 || ja[0].Event.ID != "msg_6" {
		t.Fatalf("claimed %v, want msg_6", jobIDs(ja))
	}
	if _, err := s.Recover(c, "ep_1", later, later.Add(time.Hour), later); err != nil {
		t.Fatal(err)
	}
	jb := claim(t, s, "b", later.Add(2*time.Minute), 10)
	if len(jb) != 1 || jb[0].Event.ID != "msg_6" {
		t.Fatalf("b claimed %v after a's lease expired, want msg_6", jobIDs(jb))
	}
	jobs["msg_6"] = jb[0]
	cp := done("msg_6", store.StatusFailed, 500)
	cp.Owner = "b"
	if err := s.Complete(c, cp); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.ListDeliveries(c, "msg_6"); ds[0].Status != store.StatusFailed || cp.Resent {
		t.Errorf("msg_6, recovered under a's lease, then taken over by b and failed: %s (Resent %v), want failed", ds[0].Status, cp.Resent)
	}
}
