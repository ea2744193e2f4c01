// Package storetest is the conformance suite every store.Store passes:
// the SQLite and the PostgreSQL dialects run the same tests.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// Open returns an empty store, closed when t ends.
type Open func(t *testing.T) store.Store

// Run runs every test of the suite on stores from open.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		f    func(*testing.T, store.Store)
	}{
		{"Endpoints", testEndpoints},
		{"FanOut", testFanOut},
		{"FanOutChanges", testFanOutChanges},
		{"Idempotency", testIdempotency},
		{"ListEventsPaging", testListEventsPaging},
		{"ClaimLease", testClaimLease},
		{"NextDueSkip", testNextDueSkip},
		{"NextDueLeases", testNextDueLeases},
		{"ClaimPerEndpoint", testClaimPerEndpoint},
		{"ClaimRateLimited", testClaimRateLimited},
		{"Complete", testComplete},
		{"CompleteBatch", testCompleteBatch},
		{"AttemptText", testAttemptText},
		{"CompleteStaleLease", testCompleteStaleLease},
		{"DisabledMidAttempt", testDisabledMidAttempt},
		{"Purge", testPurge},
		{"PurgeResend", testPurgeResend},
		{"PurgeInFlight", testPurgeInFlight},
		{"DeleteEndpointPending", testDeleteEndpointPending},
		{"DeleteEndpointCompleting", testDeleteEndpointCompleting},
		{"DeleteEndpointInserting", testDeleteEndpointInserting},
		{"UpdateEndpointCompleting", testUpdateEndpointCompleting},
		{"UpdateRevision", testUpdateRevision},
		{"ChangeEndpoint", testChangeEndpoint},
		{"DisableCompleting", testDisableCompleting},
		{"DisableStale", testDisableStale},
		{"DisableReenabled", testDisableReenabled},
		{"Notices", testNotices},
		{"ResendRecover", testResendRecover},
		{"ResendInFlight", testResendInFlight},
		{"ResendQueued", testResendQueued},
		{"ResendQueuedRecover", testResendQueuedRecover},
		{"RecoverInFlight", testRecoverInFlight},
		{"RecoverRacing", testRecoverRacing},
		{"Tokens", testTokens},
		{"ConcurrentClaims", testConcurrentClaims},
		{"RateSlots", testRateSlots},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, open(t)) })
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func endpoint(t *testing.T, s store.Store, id string, types ...string) *store.Endpoint {
	t.Helper()
	e := &store.Endpoint{ID: id, URL: "http://127.0.0.1:1/" + id, EventTypes: types, Enabled: true,
		Secrets: []store.Secret{{Secret: "whsec_" + id}}, Created: t0, Updated: t0}
	if err := s.CreateEndpoint(ctx(t), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func event(t *testing.T, s store.Store, id, typ string, at time.Time) *store.Event {
	t.Helper()
	ev := &store.Event{ID: id, Type: typ, Payload: []byte(`{"n":"` + id + `"}`), Created: at}
	if _, err := s.InsertEvent(ctx(t), ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func claim(t *testing.T, s store.Store, owner string, now time.Time, limit int) []*store.Job {
	t.Helper()
	jobs, err := s.Claim(ctx(t), store.ClaimRequest{Owner: owner, Now: now, Lease: time.Minute, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func jobIDs(jobs []*store.Job) []string {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.Event.ID+">"+j.Endpoint.ID)
	}
	slices.Sort(ids)
	return ids
}

func testEndpoints(t *testing.T, s store.Store) {
	c := ctx(t)
	e := &store.Endpoint{ID: "ep_1", URL: "https://example.com/hook", Description: "d", EventTypes: []string{"a", "b.*"},
		Secrets: []store.Secret{{Secret: "whsec_old", Expires: t0.Add(time.Hour)}, {Secret: "whsec_new"}}, RateLimit: 7,
		Enabled: true, Created: t0, Updated: t0}
	if err := s.CreateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetEndpoint(c, "ep_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != e.URL || got.Description != "d" || !slices.Equal(got.EventTypes, e.EventTypes) || got.RateLimit != 7 || !got.Enabled ||
		len(got.Secrets) != 2 || !got.Secrets[0].Expires.Equal(t0.Add(time.Hour)) || got.Secrets[1].Secret != "whsec_new" || !got.Created.Equal(t0) {
		t.Fatalf("got %+v, want %+v", got, e)
	}
	if a := got.Active(t0.Add(2 * time.Hour)); !slices.Equal(a, []string{"whsec_new"}) {
		t.Errorf("active secrets after expiry: %v", a)
	}
	got.Enabled, got.DisabledReason, got.URL = false, "manual", "https://example.com/v2"
	if err := s.UpdateEndpoint(c, got); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListEndpoints(c)
	if err != nil || len(list) != 1 || list[0].Enabled || list[0].DisabledReason != "manual" || list[0].URL != "https://example.com/v2" {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := s.DeleteEndpoint(c, "ep_1"); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		s.DeleteEndpoint(c, "ep_1"),
		s.UpdateEndpoint(c, got),
		func() error { _, err := s.GetEndpoint(c, "ep_1"); return err }(),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after delete: %v, want ErrNotFound", err)
		}
	}
}

func testFanOut(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_all")
	endpoint(t, s, "ep_inv", "invoice.*")
	endpoint(t, s, "ep_paid", "invoice.paid", "user.created")
	off := endpoint(t, s, "ep_off")
	off.Enabled = false
	if err := s.UpdateEndpoint(c, off); err != nil {
		t.Fatal(err)
	}
	event(t, s, "msg_1", "invoice.paid", t0)
	event(t, s, "msg_2", "invoice.created", t0)
	event(t, s, "msg_3", "user.deleted", t0)
	got := jobIDs(claim(t, s, "a", t0, 100))
	want := []string{"msg_1>ep_all", "msg_1>ep_inv", "msg_1>ep_paid", "msg_2>ep_all", "msg_2>ep_inv", "msg_3>ep_all"}
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
	ds, err := s.ListDeliveries(c, "msg_1")
	if err != nil || len(ds) != 3 || ds[0].Status != store.StatusPending || !ds[0].NextAttempt.Equal(t0) {
		t.Fatalf("deliveries of msg_1: %+v %v", ds, err)
	}
	evs, err := s.ListEvents(c, time.Time{}, "", 2)
	if err != nil || len(evs) != 2 {
		t.Fatalf("list events: %v %v", evs, err)
	}
	ev, err := s.GetEvent(c, "msg_2")
	if err != nil || ev.Type != "invoice.created" || string(ev.Payload) != `{"n":"msg_2"}` || !ev.Created.Equal(t0) {
		t.Fatalf("get event: %+v %v", ev, err)
	}
	if _, err := s.GetEvent(c, "msg_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing event: %v", err)
	}
}

func testIdempotency(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	first := &store.Event{ID: "msg_1", Type: "t", Payload: []byte("1"), IdempotencyKey: "k", Created: t0}
	if created, err := s.InsertEvent(c, first); err != nil || !created {
		t.Fatalf("first insert: %v %v", created, err)
	}
	again := &store.Event{ID: "msg_2", Type: "t", Payload: []byte("2"), IdempotencyKey: "k", Created: t0.Add(time.Second)}
	created, err := s.InsertEvent(c, again)
	if err != nil || created || again.ID != "msg_1" || string(again.Payload) != "1" {
		t.Fatalf("second insert with the same key: created %v err %v event %+v", created, err, again)
	}
	if _, err := s.GetEvent(c, "msg_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("duplicate stored: %v", err)
	}
	// Events without a key never conflict.
	for i := range 2 {
		if created, err := s.InsertEvent(c, &store.Event{ID: fmt.Sprint("msg_n", i), Type: "t", Payload: []byte("x"), Created: t0}); err != nil || !created {
			t.Fatalf("keyless insert %d: %v %v", i, created, err)
		}
	}
	if n := len(claim(t, s, "a", t0, 100)); n != 3 {
		t.Errorf("%d deliveries, want 3", n)
	}
}

// testNextDueSkip: NextDue leaves out the endpoints it is told to skip
// (a dispatcher's endpoints whose backlog it is working through).
func testNextDueSkip(t *testing.T, s store.Store) {
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "t", t0) // to ep_1 only
	endpoint(t, s, "ep_2")
	event(t, s, "msg_2", "t", t0.Add(time.Second)) // to both
	check := func(when string, skip []string, want time.Time, wantOK bool) {
		t.Helper()
		next, ok, err := s.NextDue(ctx(t), skip...)
		if err != nil || ok != wantOK || !next.Equal(want) {
			t.Errorf("%s: NextDue(%q) = %v %v %v, want %v %v", when, skip, next, ok, err, want, wantOK)
		}
	}
	check("before", nil, t0, true)
	check("before", []string{"ep_1"}, t0.Add(time.Second), true)
	check("before", []string{"ep_2"}, t0, true)
	check("before", []string{"ep_3"}, t0, true)
	check("before", []string{"ep_1", "ep_2"}, time.Time{}, false)
	jobs := claim(t, s, "a", t0, 10)
	if len(jobs) != 1 || jobs[0].Event.ID != "msg_1" {
		t.Fatalf("claimed %v, want msg_1 to ep_1", jobIDs(jobs))
	}
	j := jobs[0]
	if err := s.Complete(ctx(t), &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusSucceeded, EndpointOK: true,
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: t0, StatusCode: 204}}); err != nil {
		t.Fatal(err)
	}
	check("after msg_1", []string{"ep_2"}, t0.Add(time.Second), true)
	check("after msg_1", []string{"ep_1"}, t0.Add(time.Second), true)
	check("after msg_1", []string{"ep_2", "ep_1"}, time.Time{}, false)
}

// testNextDueLeases: NextDue is the earliest time a pending delivery can
// be claimed: when it is due, or when its lease ends if later, whether
// that lease ends before or after the first unleased delivery is due.
func testNextDueLeases(t *testing.T, s store.Store) {
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "t", t0)
	event(t, s, "msg_2", "t", t0.Add(time.Second))
	event(t, s, "msg_3", "t", t0.Add(10*time.Second))
	event(t, s, "msg_4", "t", t0.Add(10*time.Second))
	check := func(when string, want time.Time) {
		t.Helper()
		next, ok, err := s.NextDue(ctx(t))
		if err != nil || !ok || !next.Equal(want) {
			t.Errorf("%s: NextDue = %v %v %v, want %v", when, next, ok, err, want)
		}
	}
	lease := func(now time.Time, d time.Duration) *store.Job {
		t.Helper()
		jobs, err := s.Claim(ctx(t), store.ClaimRequest{Owner: "a", Now: now, Lease: d, Limit: 1})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim at %v: %v %v", now, jobs, err)
		}
		return jobs[0]
	}
	check("nothing leased", t0)
	lease(t0, time.Minute) // msg_1 until t0+60s
	check("msg_1 leased for a minute", t0.Add(time.Second))
	j := lease(t0.Add(time.Second), 5*time.Second) // msg_2 until t0+6s
	check("msg_2 leased until before msg_3 is due", t0.Add(6*time.Second))
	if err := s.Release(ctx(t), "a", []string{j.Delivery.ID}); err != nil {
		t.Fatal(err)
	}
	check("msg_2 released", t0.Add(time.Second))
	lease(t0.Add(time.Second), 20*time.Second) // msg_2 until t0+21s
	lease(t0.Add(10*time.Second), time.Minute) // msg_3 or msg_4 until t0+70s
	check("one of two due together leased", t0.Add(10*time.Second))
	lease(t0.Add(10*time.Second), 30*time.Second) // the other until t0+40s
	check("every delivery leased", t0.Add(21*time.Second))
}

func testClaimLease(t *testing.T, s store.Store) {
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "t", t0)
	event(t, s, "msg_2", "t", t0.Add(10*time.Second))
	if got := jobIDs(claim(t, s, "a", t0.Add(-time.Second), 10)); len(got) != 0 {
		t.Fatalf("claimed before due: %v", got)
	}
	jobs := claim(t, s, "a", t0, 10)
	if got := jobIDs(jobs); !slices.Equal(got, []string{"msg_1>ep_1"}) {
		t.Fatalf("claimed %v", got)
	}
	j := jobs[0]
	if j.Endpoint.URL != "http://127.0.0.1:1/ep_1" || string(j.Event.Payload) != `{"n":"msg_1"}` || j.Event.Type != "t" || j.Delivery.Attempts != 0 ||
		len(j.Endpoint.Secrets) != 1 {
		t.Fatalf("job %+v", j)
	}
	// Leased: nobody else gets it until the lease (one minute) expires.
	if got := jobIDs(claim(t, s, "b", t0.Add(30*time.Second), 10)); !slices.Equal(got, []string{"msg_2>ep_1"}) {
		t.Fatalf("second claim got %v, want only msg_2", got)
	}
	if got := jobIDs(claim(t, s, "b", t0.Add(61*time.Second), 10)); !slices.Equal(got, []string{"msg_1>ep_1"}) {
		t.Fatalf("claim after the lease expired got %v", got)
	}
	// a's lease was taken over: its completion is refused.
	err := s.Complete(ctx(t), &store.Completion{Owner: "a", Status: store.StatusSucceeded,
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: j.Delivery.ID, EventID: "msg_1", EndpointID: "ep_1", Started: t0, StatusCode: 200}})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("completion by the old owner: %v, want ErrLeaseLost", err)
	}
	// Release gives the lease back at once.
	if err := s.Release(ctx(t), "b", []string{j.Delivery.ID}); err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(claim(t, s, "c", t0.Add(62*time.Second), 10)); !slices.Equal(got, []string{"msg_1>ep_1"}) {
		t.Fatalf("claim after release got %v", got)
	}
	next, ok, err := s.NextDue(ctx(t))
	if err != nil || !ok || !next.Equal(t0.Add(30*time.Second).Add(time.Minute)) {
		t.Fatalf("NextDue = %v %v %v, want the end of b's lease on msg_2", next, ok, err)
	}
}

func testClaimPerEndpoint(t *testing.T, s store.Store) {
	endpoint(t, s, "ep_a")
	endpoint(t, s, "ep_b")
	for i := range 5 {
		event(t, s, fmt.Sprintf("msg_%d", i), "t", t0.Add(time.Duration(i)*time.Millisecond))
	}
	now := t0.Add(time.Second)
	jobs, err := s.Claim(ctx(t), store.ClaimRequest{Owner: "a", Now: now, Lease: time.Minute, Limit: 100, PerEndpoint: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_0>ep_a", "msg_0>ep_b", "msg_1>ep_a", "msg_1>ep_b"}
	if got := jobIDs(jobs); !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
	jobs, err = s.Claim(ctx(t), store.ClaimRequest{Owner: "a", Now: now, Lease: time.Minute, Limit: 100, Skip: []string{"ep_a"}})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"msg_2>ep_b", "msg_3>ep_b", "msg_4>ep_b"}
	if got := jobIDs(jobs); !slices.Equal(got, want) {
		t.Fatalf("claimed with ep_a skipped %v, want %v", got, want)
	}
	if n := len(claim(t, s, "a", now, 2)); n != 2 {
		t.Fatalf("limit 2 claimed %d", n)
	}
}

func testComplete(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "t", t0)
	j := claim(t, s, "a", t0, 10)[0]
	fail := &store.Completion{Owner: "a", Status: store.StatusPending, NextAttempt: t0.Add(5 * time.Second),
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: j.Delivery.ID, EventID: "msg_1", EndpointID: "ep_1", Started: t0,
			Duration: 15 * time.Millisecond, StatusCode: 503, Response: []byte("busy")}}
	if err := s.Complete(c, fail); err != nil {
		t.Fatal(err)
	}
	e, _ := s.GetEndpoint(c, "ep_1")
	if !e.FailingSince.Equal(t0) {
		t.Errorf("failing since %v, want %v", e.FailingSince, t0)
	}
	if n := len(claim(t, s, "a", t0.Add(4*time.Second), 10)); n != 0 {
		t.Fatalf("claimed before the retry is due")
	}
	j = claim(t, s, "a", t0.Add(5*time.Second), 10)[0]
	if j.Delivery.Attempts != 1 || !j.Endpoint.FailingSince.Equal(t0) {
		t.Fatalf("retry job %+v", j)
	}
	// A second failure keeps the first failure's time.
	fail.Attempt.ID, fail.Attempt.Started, fail.NextAttempt = "atmpt_2", t0.Add(5*time.Second), t0.Add(10*time.Second)
	if err := s.Complete(c, fail); err != nil {
		t.Fatal(err)
	}
	e, _ = s.GetEndpoint(c, "ep_1")
	if !e.FailingSince.Equal(t0) {
		t.Errorf("failing since %v after a second failure, want %v", e.FailingSince, t0)
	}
	claim(t, s, "a", t0.Add(10*time.Second), 10)
	ok := &store.Completion{Owner: "a", Status: store.StatusSucceeded, EndpointOK: true,
		Attempt: store.Attempt{ID: "atmpt_3", DeliveryID: j.Delivery.ID, EventID: "msg_1", EndpointID: "ep_1", Started: t0.Add(10 * time.Second), StatusCode: 204}}
	if err := s.Complete(c, ok); err != nil {
		t.Fatal(err)
	}
	e, _ = s.GetEndpoint(c, "ep_1")
	if !e.FailingSince.IsZero() {
		t.Errorf("failing since %v after a success", e.FailingSince)
	}
	as, err := s.ListAttempts(c, "msg_1")
	if err != nil || len(as) != 3 {
		t.Fatalf("attempts %+v %v", as, err)
	}
	if a := as[0]; a.StatusCode != 503 || string(a.Response) != "busy" || a.Duration != 15*time.Millisecond || a.Outcome != store.StatusPending || a.DeliveryID != j.Delivery.ID {
		t.Errorf("first attempt %+v", a)
	}
	if as[2].Outcome != store.StatusSucceeded {
		t.Errorf("last attempt %+v", as[2])
	}
	ds, _ := s.ListDeliveries(c, "msg_1")
	if d := ds[0]; d.Status != store.StatusSucceeded || d.Attempts != 3 || d.LastCode != 204 {
		t.Errorf("delivery %+v", d)
	}
	if _, ok, _ := s.NextDue(c); ok {
		t.Errorf("NextDue reports work after every delivery succeeded")
	}
	// Disable: the endpoint's other deliveries stay pending, unclaimed.
	event(t, s, "msg_2", "t", t0.Add(20*time.Second))
	event(t, s, "msg_3", "t", t0.Add(20*time.Second))
	j = claim(t, s, "a", t0.Add(20*time.Second), 1)[0]
	gone := &store.Completion{Owner: "a", Status: store.StatusFailed, Disable: "410 Gone",
		Attempt: store.Attempt{ID: "atmpt_4", DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_1", Started: t0.Add(20 * time.Second), StatusCode: 410}}
	if err := s.Complete(c, gone); err != nil {
		t.Fatal(err)
	}
	e, _ = s.GetEndpoint(c, "ep_1")
	if e.Enabled || e.DisabledReason != "410 Gone" || !gone.Disabled {
		t.Errorf("endpoint after disable: %+v (completion's Disabled %v)", e, gone.Disabled)
	}
	if n := len(claim(t, s, "a", t0.Add(time.Hour), 10)); n != 0 {
		t.Errorf("claimed %d deliveries of a disabled endpoint", n)
	}
	if _, ok, _ := s.NextDue(c); ok {
		t.Errorf("NextDue reports work for a disabled endpoint")
	}
	other := "msg_2"
	if j.Event.ID == other {
		other = "msg_3"
	}
	if ds, _ := s.ListDeliveries(c, other); ds[0].Status != store.StatusPaused {
		t.Errorf("the disabled endpoint's other delivery: %+v, want paused", ds[0])
	}
	// Enabled again, its paused deliveries are pending and claimed.
	e.Enabled, e.DisabledReason = true, ""
	if err := s.UpdateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(claim(t, s, "a", t0.Add(time.Hour), 10)); !slices.Equal(got, []string{other + ">ep_1"}) {
		t.Errorf("after enabling: claimed %v, want %s", got, other)
	}
	// Disabled through UpdateEndpoint, the same.
	event(t, s, "msg_4", "t", t0.Add(time.Hour))
	e.Enabled = false
	if err := s.UpdateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.ListDeliveries(c, "msg_4"); len(ds) != 1 || ds[0].Status != store.StatusPaused {
		t.Errorf("a pending delivery after disabling: %+v, want paused", ds)
	}
	event(t, s, "msg_5", "t", t0.Add(time.Hour))
	if ds, _ := s.ListDeliveries(c, "msg_5"); len(ds) != 0 {
		t.Errorf("an event for a disabled endpoint got a delivery: %+v", ds)
	}
}

func testNotices(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	endpoint(t, s, "ep_ops")
	ev := &store.Event{ID: "msg_1", Type: "t", Payload: []byte("{}"), Created: t0}
	if _, err := s.InsertEvent(c, ev, "ep_1"); err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(claim(t, s, "a", t0, 10)); !slices.Equal(got, []string{"msg_1>ep_1"}) {
		t.Fatalf("targeted insert delivered to %v", got)
	}
	ds, _ := s.ListDeliveries(c, "msg_1")
	notice := &store.Event{ID: "msg_n", Type: "message.attempt.exhausted", Payload: []byte("{}"), Created: t0}
	err := s.Complete(c, &store.Completion{Owner: "a", Status: store.StatusFailed, Notices: []*store.Event{notice}, NoticeEndpoint: "ep_ops",
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: ds[0].ID, EventID: "msg_1", EndpointID: "ep_1", Started: t0, StatusCode: 500}})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobIDs(claim(t, s, "a", t0, 10)); !slices.Equal(got, []string{"msg_n>ep_ops"}) {
		t.Fatalf("notice delivered to %v", got)
	}
}

func testResendRecover(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	for i := range 3 {
		event(t, s, fmt.Sprint("msg_", i), "t", t0.Add(time.Duration(i)*time.Hour))
	}
	for _, j := range claim(t, s, "a", t0.Add(3*time.Hour), 10) {
		err := s.Complete(c, &store.Completion{Owner: "a", Status: store.StatusFailed,
			Attempt: store.Attempt{ID: "atmpt_" + j.Event.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_1", Started: t0, StatusCode: 500}})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(4 * time.Hour)
	n, err := s.Recover(c, "ep_1", t0.Add(time.Hour), t0.Add(3*time.Hour), now)
	if err != nil || n != 2 {
		t.Fatalf("recover: %d %v, want 2", n, err)
	}
	if got := jobIDs(claim(t, s, "a", now, 10)); !slices.Equal(got, []string{"msg_1>ep_1", "msg_2>ep_1"}) {
		t.Fatalf("recovered %v", got)
	}
	if n, err := s.Resend(c, "msg_0", "", now); err != nil || n != 1 {
		t.Fatalf("resend: %d %v", n, err)
	}
	endpoint(t, s, "ep_2")
	if n, err := s.Resend(c, "msg_0", "ep_2", now); err != nil || n != 1 {
		t.Fatalf("resend to a new endpoint: %d %v", n, err)
	}
	got := jobIDs(claim(t, s, "a", now, 10))
	if !slices.Equal(got, []string{"msg_0>ep_1", "msg_0>ep_2"}) {
		t.Fatalf("resent %v", got)
	}
	ds, _ := s.ListDeliveries(c, "msg_0")
	if ds[0].Attempts != 0 || ds[0].Status != store.StatusPending {
		t.Errorf("resent delivery %+v, want a fresh schedule", ds[0])
	}
	if _, err := s.Resend(c, "msg_none", "", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resend of a missing event: %v", err)
	}
	if _, err := s.Resend(c, "msg_0", "ep_none", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resend to a missing endpoint: %v", err)
	}
}

func testTokens(t *testing.T, s store.Store) {
	c := ctx(t)
	tok := &store.Token{ID: "tok_1", Name: "admin", Hash: []byte("0123456789abcdef0123456789abcdef"), Created: t0}
	if err := s.CreateToken(c, tok); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenByHash(c, tok.Hash)
	if err != nil || got.ID != "tok_1" || got.Name != "admin" {
		t.Fatalf("by hash: %+v %v", got, err)
	}
	if _, err := s.TokenByHash(c, []byte("other")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown hash: %v", err)
	}
	if err := s.RevokeToken(c, "tok_1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenByHash(c, tok.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked token still valid: %v", err)
	}
	list, err := s.ListTokens(c)
	if err != nil || len(list) != 1 || !list[0].Revoked.Equal(t0.Add(time.Hour)) {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := s.RevokeToken(c, "tok_1", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second revoke: %v", err)
	}
}

// testConcurrentClaims has several claimers race for the same due
// deliveries: each is handed out once.
func testConcurrentClaims(t *testing.T, s store.Store) {
	const events, endpoints, claimers = 100, 3, 4
	for i := range endpoints {
		endpoint(t, s, fmt.Sprint("ep_", i))
	}
	for i := range events {
		event(t, s, fmt.Sprintf("msg_%03d", i), "t", t0)
	}
	var (
		mu   sync.Mutex
		seen = map[string]string{}
		wg   sync.WaitGroup
	)
	for w := range claimers {
		owner := fmt.Sprint("owner", w)
		wg.Go(func() {
			for {
				jobs, err := s.Claim(ctx(t), store.ClaimRequest{Owner: owner, Now: t0, Lease: time.Hour, Limit: 7})
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					if prev, dup := seen[j.Delivery.ID]; dup {
						t.Errorf("delivery %s claimed by %s and %s", j.Delivery.ID, prev, owner)
					}
					seen[j.Delivery.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != events*endpoints {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), events*endpoints)
	}
}

// testCompleteBatch: one Complete of several attempts (as the
// dispatcher's group commit writes them) records each, skips the one
// whose lease another owner took, and leaves each endpoint's health as
// its last attempt in the batch says.
func testCompleteBatch(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	endpoint(t, s, "ep_2")
	event(t, s, "msg_1", "t", t0)
	event(t, s, "msg_2", "t", t0)
	event(t, s, "msg_3", "t", t0)
	jobs := claim(t, s, "a", t0, 10)
	if len(jobs) != 6 {
		t.Fatalf("claimed %d, want 6", len(jobs))
	}
	by := map[string][]*store.Job{}
	for _, j := range jobs {
		by[j.Endpoint.ID] = append(by[j.Endpoint.ID], j)
	}
	// Another owner takes one of ep_2's leases once it expired.
	stolen := by["ep_2"][2]
	if err := s.Release(c, "a", []string{stolen.Delivery.ID}); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, "b", t0, 10); len(got) != 1 || got[0].Delivery.ID != stolen.Delivery.ID {
		t.Fatalf("b claimed %+v", got)
	}
	var cs []*store.Completion
	add := func(j *store.Job, n int, code int, ok bool, at time.Duration) *store.Completion {
		status := store.StatusSucceeded
		if !ok {
			status = store.StatusPending
		}
		cp := &store.Completion{Owner: "a", Status: status, NextAttempt: t0.Add(time.Hour), EndpointOK: ok,
			Attempt: store.Attempt{ID: fmt.Sprint("atmpt_", n), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
				Started: t0.Add(at), Duration: time.Duration(n) * time.Millisecond, StatusCode: code, Response: []byte(fmt.Sprint("body ", n)), Error: ""}}
		cs = append(cs, cp)
		return cp
	}
	// ep_1: a failure, then successes: healthy. ep_2: a success, then a
	// failure: failing since the failure; its third completion lost its lease.
	add(by["ep_1"][0], 1, 500, false, time.Second)
	add(by["ep_2"][0], 2, 204, true, 2*time.Second)
	add(by["ep_1"][1], 3, 204, true, 3*time.Second)
	add(by["ep_2"][1], 4, 503, false, 4*time.Second)
	add(by["ep_1"][2], 5, 200, true, 5*time.Second)
	lost := add(stolen, 6, 204, true, 6*time.Second)
	err := s.Complete(c, cs...)
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Complete: %v, want ErrLeaseLost", err)
	}
	for _, cp := range cs {
		if cp.LeaseLost != (cp == lost) {
			t.Errorf("%s: LeaseLost %v", cp.Attempt.ID, cp.LeaseLost)
		}
	}
	if e, _ := s.GetEndpoint(c, "ep_1"); !e.FailingSince.IsZero() {
		t.Errorf("ep_1 failing since %v, want healthy", e.FailingSince)
	}
	if e, _ := s.GetEndpoint(c, "ep_2"); !e.FailingSince.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("ep_2 failing since %v, want %v", e.FailingSince, t0.Add(4*time.Second))
	}
	recorded := 0
	for _, ev := range []string{"msg_1", "msg_2", "msg_3"} {
		as, err := s.ListAttempts(c, ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			recorded++
			var want *store.Completion
			for _, cp := range cs {
				if cp.Attempt.ID == a.ID {
					want = cp
				}
			}
			switch {
			case want == nil || want == lost:
				t.Errorf("attempt %+v recorded", a)
			case a.StatusCode != want.Attempt.StatusCode || string(a.Response) != string(want.Attempt.Response) ||
				a.Duration != want.Attempt.Duration || !a.Started.Equal(want.Attempt.Started) || a.Outcome != want.Status ||
				a.DeliveryID != want.Attempt.DeliveryID || a.EndpointID != want.Attempt.EndpointID:
				t.Errorf("attempt %+v, want %+v", a, want.Attempt)
			}
		}
		ds, _ := s.ListDeliveries(c, ev)
		for _, d := range ds {
			if d.ID == stolen.Delivery.ID {
				if d.Attempts != 0 {
					t.Errorf("the stolen delivery has %d attempts recorded", d.Attempts)
				}
				continue
			}
			for _, cp := range cs {
				if cp.Attempt.DeliveryID == d.ID && (d.Attempts != 1 || d.Status != cp.Status || d.LastCode != cp.Attempt.StatusCode) {
					t.Errorf("delivery %+v after %+v", d, cp)
				}
			}
		}
	}
	if recorded != 5 {
		t.Errorf("%d attempts recorded, want 5", recorded)
	}
	// b still holds its lease: a's completion did not release it.
	if err := s.Complete(c, &store.Completion{Owner: "b", Status: store.StatusSucceeded, EndpointOK: true,
		Attempt: store.Attempt{ID: "atmpt_b", DeliveryID: stolen.Delivery.ID, EventID: stolen.Event.ID, EndpointID: "ep_2", Started: t0.Add(7 * time.Second)}}); err != nil {
		t.Errorf("b's completion: %v", err)
	}
}

// testCompleteStaleLease: an owner whose lease expired and who claimed
// the delivery again (a second attempt may be under way) cannot record
// the first attempt under the second lease, alone or in a batch (which
// PostgreSQL writes in bulk): recording it would end the second lease,
// and a third claim could attempt the delivery while the second attempt
// runs. The second attempt's completion is recorded.
func testCompleteStaleLease(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "t", t0)
	event(t, s, "msg_2", "t", t0)
	first := claim(t, s, "a", t0, 10)
	if len(first) != 2 {
		t.Fatalf("claimed %d, want 2", len(first))
	}
	if want := t0.Add(time.Minute); !first[0].LeaseUntil.Equal(want) {
		t.Fatalf("job's LeaseUntil %v, want %v", first[0].LeaseUntil, want)
	}
	again := claim(t, s, "a", t0.Add(61*time.Second), 10)
	if len(again) != 2 {
		t.Fatalf("claimed %d after the lease expired, want 2", len(again))
	}
	completion := func(j *store.Job, id string) *store.Completion {
		return &store.Completion{Owner: "a", Status: store.StatusPending, NextAttempt: t0.Add(62 * time.Second), LeaseUntil: j.LeaseUntil,
			Attempt: store.Attempt{ID: id, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: t0, StatusCode: 500}}
	}
	for _, cs := range [][]*store.Completion{
		{completion(first[0], "atmpt_1")},
		{completion(first[0], "atmpt_2"), completion(first[1], "atmpt_3")},
	} {
		if err := s.Complete(c, cs...); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("%d completions under the expired lease: %v, want ErrLeaseLost", len(cs), err)
		}
		for _, cp := range cs {
			if !cp.LeaseLost {
				t.Fatalf("%s recorded under the owner's later lease", cp.Attempt.ID)
			}
		}
	}
	// The second lease still holds: nobody claims the deliveries.
	if got := claim(t, s, "b", t0.Add(63*time.Second), 10); len(got) != 0 {
		t.Fatalf("claimed %v during the second lease", jobIDs(got))
	}
	cs := []*store.Completion{completion(again[0], "atmpt_4"), completion(again[1], "atmpt_5")}
	if err := s.Complete(c, cs...); err != nil {
		t.Fatalf("completions under the current lease: %v", err)
	}
	if err := s.Complete(c, completion(first[0], "atmpt_6")); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("completion after the delivery was recorded: %v, want ErrLeaseLost", err)
	}
}

// testDisabledMidAttempt: an endpoint disabled while attempts to it are
// under way pauses the deliveries they leave to retry (alone, or in a
// batch, which PostgreSQL writes in bulk), as it pauses its other pending
// deliveries; enabled again, they are pending and claimed.
func testDisabledMidAttempt(t *testing.T, s store.Store) {
	c := ctx(t)
	e := endpoint(t, s, "ep_1")
	endpoint(t, s, "ep_2")
	for i := range 3 {
		event(t, s, fmt.Sprint("msg_", i), "t", t0)
	}
	jobs := claim(t, s, "a", t0, 10)
	if len(jobs) != 6 {
		t.Fatalf("claimed %d, want 6", len(jobs))
	}
	e.Enabled, e.DisabledReason = false, "manual"
	if err := s.UpdateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	var ep1 []*store.Completion
	var cs []*store.Completion
	for i, j := range jobs {
		cp := &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusPending, NextAttempt: t0.Add(5 * time.Second),
			Attempt: store.Attempt{ID: fmt.Sprint("atmpt_", i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: t0, StatusCode: 503}}
		if j.Endpoint.ID == "ep_1" {
			ep1 = append(ep1, cp)
		}
		cs = append(cs, cp)
	}
	// One completion alone, the others in a batch.
	if err := s.Complete(c, ep1[0]); err != nil {
		t.Fatal(err)
	}
	var rest []*store.Completion
	for _, cp := range cs {
		if cp != ep1[0] {
			rest = append(rest, cp)
		}
	}
	if err := s.Complete(c, rest...); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ds, err := s.ListDeliveries(c, fmt.Sprint("msg_", i))
		if err != nil || len(ds) != 2 {
			t.Fatalf("deliveries of msg_%d: %+v %v", i, ds, err)
		}
		for _, d := range ds {
			want := store.StatusPending
			if d.EndpointID == "ep_1" {
				want = store.StatusPaused
			}
			if d.Status != want || d.Attempts != 1 {
				t.Errorf("delivery to %s after its attempt: %s, %d attempts; want %s, 1", d.EndpointID, d.Status, d.Attempts, want)
			}
		}
	}
	e, err := s.GetEndpoint(c, "ep_1") // (the completions changed it)
	if err != nil {
		t.Fatal(err)
	}
	e.Enabled, e.DisabledReason = true, ""
	if err := s.UpdateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_0>ep_1", "msg_0>ep_2", "msg_1>ep_1", "msg_1>ep_2", "msg_2>ep_1", "msg_2>ep_2"}
	if got := jobIDs(claim(t, s, "a", t0.Add(5*time.Second), 10)); !slices.Equal(got, want) {
		t.Errorf("claimed after enabling %v, want %v", got, want)
	}
}

// testPurge: Purge deletes the events created before its time, oldest
// first and no more than its limit, with their deliveries and attempts,
// whatever became of them (succeeded, failed, paused, or none made),
// but keeps an event with a delivery still pending; a deleted event's
// idempotency key is free again.
func testPurge(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1", "t")
	off := endpoint(t, s, "ep_off", "paused")
	day := 24 * time.Hour
	insert := func(id, typ, key string, at time.Time) {
		t.Helper()
		if _, err := s.InsertEvent(c, &store.Event{ID: id, Type: typ, Payload: []byte("{}"), IdempotencyKey: key, Created: at}); err != nil {
			t.Fatal(err)
		}
	}
	insert("msg_done", "t", "k_done", t0)
	insert("msg_failed", "t", "", t0.Add(time.Second))
	insert("msg_pending", "t", "", t0.Add(2*time.Second))
	insert("msg_paused", "paused", "", t0.Add(3*time.Second))
	insert("msg_none", "unmatched", "", t0.Add(4*time.Second))
	insert("msg_new", "t", "", t0.Add(2*day))
	off.Enabled = false
	if err := s.UpdateEndpoint(c, off); err != nil {
		t.Fatal(err)
	}
	outcome := map[string]string{"msg_done": store.StatusSucceeded, "msg_failed": store.StatusFailed, "msg_pending": store.StatusPending, "msg_new": store.StatusSucceeded}
	for _, j := range claim(t, s, "a", t0.Add(3*day), 10) {
		err := s.Complete(c, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: outcome[j.Event.ID], NextAttempt: t0.Add(4 * day),
			Attempt: store.Attempt{ID: "atmpt_" + j.Event.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: t0, StatusCode: 500}})
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Purge(c, t0.Add(day), 1)
	if err != nil || n != 1 {
		t.Fatalf("Purge with a limit of 1: %d %v", n, err)
	}
	if _, err := s.GetEvent(c, "msg_done"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the oldest event after a purge of 1: %v, want ErrNotFound", err)
	}
	if n, err := s.Purge(c, t0.Add(day), 100); err != nil || n != 3 {
		t.Fatalf("Purge: %d %v, want 3 (failed, paused, none)", n, err)
	}
	for _, id := range []string{"msg_done", "msg_failed", "msg_paused", "msg_none"} {
		if _, err := s.GetEvent(c, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after the purge: %v, want ErrNotFound", id, err)
		}
		ds, err1 := s.ListDeliveries(c, id)
		as, err2 := s.ListAttempts(c, id)
		if len(ds) != 0 || len(as) != 0 || err1 != nil || err2 != nil {
			t.Errorf("%s after the purge: deliveries %+v (%v), attempts %+v (%v)", id, ds, err1, as, err2)
		}
	}
	for _, id := range []string{"msg_pending", "msg_new"} {
		if _, err := s.GetEvent(c, id); err != nil {
			t.Errorf("%s after the purge: %v", id, err)
		}
		if as, _ := s.ListAttempts(c, id); len(as) != 1 {
			t.Errorf("%s after the purge: attempts %+v", id, as)
		}
	}
	if n, err := s.Purge(c, t0.Add(day), 100); err != nil || n != 0 {
		t.Errorf("a second purge: %d %v, want 0", n, err)
	}
	if got := jobIDs(claim(t, s, "a", t0.Add(4*day), 10)); !slices.Equal(got, []string{"msg_pending>ep_1"}) {
		t.Errorf("claimed after the purge %v, want msg_pending's retry", got)
	}
	again := &store.Event{ID: "msg_again", Type: "t", Payload: []byte("{}"), IdempotencyKey: "k_done", Created: t0.Add(5 * day)}
	if created, err := s.InsertEvent(c, again); err != nil || !created || again.ID != "msg_again" {
		t.Errorf("an event with a purged event's idempotency key: created %v, %v, id %s", created, err, again.ID)
	}
}

// testDeleteEndpointPending: deleting an endpoint with deliveries
// pending, one of them leased with an attempt under way and another with
// attempts recorded, deletes them and their attempts and nothing of the
// other endpoints; the attempt under way is then refused (ErrLeaseLost)
// rather than recorded or failing the batch it is written with.
func testDeleteEndpointPending(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	endpoint(t, s, "ep_2")
	event(t, s, "msg_1", "t", t0)
	event(t, s, "msg_2", "t", t0)
	jobs := claim(t, s, "a", t0, 10)
	if len(jobs) != 4 {
		t.Fatalf("claimed %d, want 4", len(jobs))
	}
	var cs []*store.Completion
	for i, j := range jobs {
		cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusPending, NextAttempt: t0.Add(time.Second),
			Attempt: store.Attempt{ID: fmt.Sprint("atmpt_", i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: t0, StatusCode: 500}})
	}
	if err := s.Complete(c, cs...); err != nil {
		t.Fatal(err)
	}
	jobs = claim(t, s, "a", t0.Add(time.Second), 10)
	if len(jobs) != 4 {
		t.Fatalf("claimed %d again, want 4", len(jobs))
	}
	if err := s.DeleteEndpoint(c, "ep_1"); err != nil {
		t.Fatal(err)
	}
	cs = cs[:0]
	for i, j := range jobs {
		cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusSucceeded, EndpointOK: true,
			Attempt: store.Attempt{ID: fmt.Sprint("atmpt_again_", i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID, Started: t0.Add(time.Second), StatusCode: 200}})
	}
	if err := s.Complete(c, cs...); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("completions after the endpoint was deleted: %v, want ErrLeaseLost", err)
	}
	for _, cp := range cs {
		if cp.LeaseLost != (cp.Attempt.EndpointID == "ep_1") {
			t.Errorf("%s to %s: LeaseLost %v", cp.Attempt.ID, cp.Attempt.EndpointID, cp.LeaseLost)
		}
	}
	for _, ev := range []string{"msg_1", "msg_2"} {
		ds, _ := s.ListDeliveries(c, ev)
		as, _ := s.ListAttempts(c, ev)
		if len(ds) != 1 || ds[0].EndpointID != "ep_2" || ds[0].Status != store.StatusSucceeded || len(as) != 2 {
			t.Errorf("%s: deliveries %+v, %d attempts; want ep_2's alone, succeeded, with its 2 attempts", ev, ds, len(as))
		}
		for _, a := range as {
			if a.EndpointID != "ep_2" {
				t.Errorf("%s: an attempt to the deleted endpoint kept: %+v", ev, a)
			}
		}
	}
	if _, ok, err := s.NextDue(c); ok || err != nil {
		t.Errorf("NextDue after: %v %v, want nothing pending", ok, err)
	}
}
