package storetest

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testDisableStale: a completion disabling its endpoint for failing
// too long, decided on the FailingSince read at the claim, disables it
// only while that is still the endpoint's: not once its user enabled it
// again (clearing it) during the attempt. Nor does a completion's
// disable overwrite a disable its user made meanwhile.
func testDisableStale(t *testing.T, s store.Store) {
	c := ctx(t)
	e := endpoint(t, s, "ep_stale")
	since := t0.Add(-48 * time.Hour)
	e.FailingSince = since
	if err := s.UpdateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	event(t, s, "ev_stale1", "t", t0)
	event(t, s, "ev_stale2", "t", t0)
	jobs := claim(t, s, "a", t0, 10)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d, want 2", len(jobs))
	}
	complete := func(j *store.Job) *store.Completion {
		t.Helper()
		cp := &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusPending, NextAttempt: t0.Add(time.Hour),
			Disable: "failing for too long", DisableRevision: j.Endpoint.Revision,
			Attempt: store.Attempt{ID: "atmpt_" + j.Delivery.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
				Started: t0, Duration: time.Second, StatusCode: 500}}
		if err := s.Complete(c, cp); err != nil {
			t.Fatal(err)
		}
		return cp
	}
	// Enabled again by its user (failing since cleared) during the attempt.
	e, _ = s.GetEndpoint(c, e.ID)
	e.FailingSince = time.Time{}
	if err := s.UpdateEndpoint(c, e); err != nil {
		t.Fatal(err)
	}
	if complete(jobs[0]).Disabled {
		t.Error("Disabled set by a completion that did not disable its endpoint")
	}
	got, err := s.GetEndpoint(c, e.ID)
	if err != nil || !got.Enabled || !got.FailingSince.Equal(t0) {
		t.Fatalf("endpoint %+v (%v): want enabled, failing since %v (the attempt after its enable)", got, err, t0)
	}
	// Disabled by its user during the attempt: their reason stands, and
	// the delivery is paused.
	got.Enabled, got.DisabledReason = false, "by hand"
	if err := s.UpdateEndpoint(c, got); err != nil {
		t.Fatal(err)
	}
	if cur, err := s.GetEndpoint(c, e.ID); err == nil {
		jobs[1].Endpoint.Revision = cur.Revision // not stale: disabled already is what keeps it
	}
	if complete(jobs[1]).Disabled {
		t.Error("Disabled set by a completion to an endpoint disabled already")
	}
	got, err = s.GetEndpoint(c, e.ID)
	if err != nil || got.Enabled || got.DisabledReason != "by hand" {
		t.Fatalf("endpoint %+v (%v): want disabled by hand", got, err)
	}
	ds, err := s.ListDeliveries(c, "ev_stale2")
	if err != nil || len(ds) != 1 || ds[0].Status != store.StatusPaused {
		t.Fatalf("deliveries %+v (%v): want one paused", ds, err)
	}
}
