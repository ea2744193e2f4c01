package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testResendInFlight: a Resend of deliveries whose attempts are under
// way is not undone by their results: whatever each result (succeeded,
// failed for good, a retry later), recorded alone or in a batch (which
// PostgreSQL writes in bulk), the delivery is left pending, due at the
// resend's time, with a new schedule, and attempted again; the attempts
// are recorded as they were. A delivery not resent keeps its result. A
// lease given back (Release) or taken over by another owner after it
// expired has its resend made by the next attempt, not one more; one its
// owner takes again (its attempt under way) keeps it. The completion of
// an attempt resent has its Resent set.
func testResendInFlight(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	endpoint(t, s, "ep_2")
	for i := 1; i <= 3; i++ {
		event(t, s, fmt.Sprint("msg_", i), "t", t0)
	}
	jobs := map[string]*store.Job{}
	for _, j := range claim(t, s, "a", t0, 10) {
		jobs[j.Event.ID+">"+j.Endpoint.ID] = j
	}
	if len(jobs) != 6 {
		t.Fatalf("claimed %d, want 6", len(jobs))
	}
	resent := t0.Add(time.Second)
	if n, err := s.Resend(c, "msg_1", "", resent); err != nil || n != 2 {
		t.Fatalf("resend of msg_1: %d %v", n, err)
	}
	if n, err := s.Resend(c, "msg_2", "ep_1", resent); err != nil || n != 1 {
		t.Fatalf("resend of msg_2 to ep_1: %d %v", n, err)
	}
	done := func(key, status string, code int, lease time.Time) *store.Completion {
		j := jobs[key]
		return &store.Completion{Owner: "a", LeaseUntil: lease, Status: status, NextAttempt: t0.Add(time.Hour), EndpointOK: status == store.StatusSucceeded,
			Attempt: store.Attempt{ID: store.NewID("atmpt", t0), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
				Started: t0, Duration: 2 * time.Second, StatusCode: code}}
	}
	lease := t0.Add(time.Minute)
	for _, cs := range [][]*store.Completion{
		{done("msg_1>ep_1", store.StatusSucceeded, 200, lease)},
		{done("msg_1>ep_2", store.StatusPending, 503, lease)},
		{done("msg_2>ep_1", store.StatusFailed, 400, lease), done("msg_2>ep_2", store.StatusSucceeded, 204, lease),
			done("msg_3>ep_1", store.StatusSucceeded, 204, lease), done("msg_3>ep_2", store.StatusFailed, 410, lease)},
	} {
		if err := s.Complete(c, cs...); err != nil {
			t.Fatal(err)
		}
		for _, cp := range cs {
			if want := cp.Attempt.EventID == "msg_1" || cp.Attempt.EventID == "msg_2" && cp.Attempt.EndpointID == "ep_1"; cp.Resent != want {
				t.Errorf("%s>%s: completion's Resent %v, want %v (due again at once)", cp.Attempt.EventID, cp.Attempt.EndpointID, cp.Resent, want)
			}
		}
	}
	want := map[string]string{"msg_1>ep_1": store.StatusPending, "msg_1>ep_2": store.StatusPending, "msg_2>ep_1": store.StatusPending,
		"msg_2>ep_2": store.StatusSucceeded, "msg_3>ep_1": store.StatusSucceeded, "msg_3>ep_2": store.StatusFailed}
	for i := 1; i <= 3; i++ {
		ev := fmt.Sprint("msg_", i)
		ds, err := s.ListDeliveries(c, ev)
		if err != nil || len(ds) != 2 {
			t.Fatalf("deliveries of %s: %+v %v", ev, ds, err)
		}
		for _, d := range ds {
			key := ev + ">" + d.EndpointID
			if d.Status != want[key] {
				t.Errorf("%s after its attempt, resent while it was under way: %s, want %s", key, d.Status, want[key])
			}
			if d.Status == store.StatusPending && (d.Attempts != 0 || !d.NextAttempt.Equal(resent)) {
				t.Errorf("%s resent: %d attempts, due %v; want 0, due %v", key, d.Attempts, d.NextAttempt, resent)
			}
		}
		as, err := s.ListAttempts(c, ev)
		if err != nil || len(as) != 2 {
			t.Fatalf("attempts of %s: %+v %v", ev, as, err)
		}
	}
	again := claim(t, s, "a", resent, 10)
	if got := jobIDs(again); !slices.Equal(got, []string{"msg_1>ep_1", "msg_1>ep_2", "msg_2>ep_1"}) {
		t.Fatalf("claimed after the attempts %v, want the three resent", got)
	}
	var cs []*store.Completion
	for _, j := range again {
		jobs[j.Event.ID+">"+j.Endpoint.ID] = j
		cs = append(cs, done(j.Event.ID+">"+j.Endpoint.ID, store.StatusSucceeded, 200, j.LeaseUntil))
	}
	if err := s.Complete(c, cs...); err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(claim(t, s, "a", t0.Add(2*time.Hour), 10)); len(got) != 0 {
		t.Fatalf("claimed %v after the resent attempts succeeded", got)
	}

	// Given back unattempted: the next claim is the attempt asked for.
	leased := func(owner string, now time.Time) *store.Job {
		t.Helper()
		js := claim(t, s, owner, now, 10)
		if len(js) != 1 {
			t.Fatalf("%s claimed %v at %v, want one delivery", owner, jobIDs(js), now)
		}
		return js[0]
	}
	now := t0.Add(3 * time.Hour)
	resend := func() {
		t.Helper()
		if n, err := s.Resend(c, "msg_2", "ep_2", now); err != nil || n != 1 {
			t.Fatalf("resend of msg_2 to ep_2: %d %v", n, err)
		}
	}
	// (An attempt starts at its claim, by default now.)
	completeStarted := func(j *store.Job, owner string, lease, started time.Time) error {
		return s.Complete(c, &store.Completion{Owner: owner, LeaseUntil: lease, LeaseStarted: started, Status: store.StatusSucceeded, EndpointOK: true,
			Attempt: store.Attempt{ID: store.NewID("atmpt", now), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: started, StatusCode: 200}})
	}
	complete := func(j *store.Job, owner string, lease time.Time) error { return completeStarted(j, owner, lease, now) }
	settled := func(when string) {
		t.Helper()
		if got := jobIDs(claim(t, s, "z", now.Add(time.Hour), 10)); len(got) != 0 {
			t.Fatalf("%s: claimed %v, want nothing", when, got)
		}
	}
	resend()
	j := leased("a", now)
	resend()
	if err := s.Release(c, "a", []string{j.Delivery.ID}); err != nil {
		t.Fatal(err)
	}
	j = leased("a", now)
	if err := complete(j, "a", j.LeaseUntil); err != nil {
		t.Fatal(err)
	}
	settled("resent, released, attempted")

	// Taken over by b after a's lease expired: b's attempt is the one
	// asked for, and a's result is refused.
	resend()
	ja := leased("a", now)
	resend()
	now = now.Add(2 * time.Minute)
	jb := leased("b", now)
	if err := complete(ja, "a", ja.LeaseUntil); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a's completion after b took the lease: %v, want ErrLeaseLost", err)
	}
	if err := complete(jb, "b", jb.LeaseUntil); err != nil {
		t.Fatal(err)
	}
	settled("resent, taken over, attempted")

	// Taken again by its owner, its attempt under way: that attempt,
	// recorded under the new lease, is followed by another.
	resend()
	ja = leased("a", now)
	started := now
	resend()
	now = now.Add(2 * time.Minute)
	renewed := leased("a", now)
	if err := completeStarted(ja, "a", renewed.LeaseUntil, started); err != nil {
		t.Fatal(err)
	}
	j = leased("a", now)
	if j.Delivery.Attempts != 0 {
		t.Errorf("the resent delivery has %d attempts, want 0", j.Delivery.Attempts)
	}
	if err := complete(j, "a", j.LeaseUntil); err != nil {
		t.Fatal(err)
	}
	settled("resent, lease renewed, attempted twice")
}
