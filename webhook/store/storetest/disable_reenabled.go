package storetest

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testDisableReenabled: a completion disabling its endpoint, of an
// attempt made to the endpoint at a revision (Completion.DisableRevision),
// disables it only while that is still its revision: not after its user
// disabled and enabled it again during the attempt (a 410 Gone
// answering a request sent before the enable undid it), nor after its
// user changed it (its URL) while it was failing for too long. At the
// revision it was made to, the attempt's own health write (its first
// failure) does not stop its disable.
func testDisableReenabled(t *testing.T, s store.Store) {
	c := ctx(t)
	complete := func(j *store.Job, code int, disable string) *store.Completion {
		t.Helper()
		status := store.StatusPending
		if code == 410 {
			status = store.StatusFailed
		}
		cp := &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: status, NextAttempt: t0.Add(time.Hour),
			Disable: disable, DisableRevision: j.Endpoint.Revision,
			Attempt: store.Attempt{ID: "atmpt_" + j.Delivery.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
				Started: t0, Duration: time.Second, StatusCode: code}}
		if err := s.Complete(c, cp); err != nil {
			t.Fatal(err)
		}
		return cp
	}
	one := func(id string) *store.Job {
		t.Helper()
		jobs := claim(t, s, "a", t0, 10)
		if len(jobs) != 1 || jobs[0].Endpoint.ID != id {
			t.Fatalf("claimed %v, want one of %s", jobIDs(jobs), id)
		}
		return jobs[0]
	}
	update := func(e *store.Endpoint) {
		t.Helper()
		if err := s.UpdateEndpoint(c, e); err != nil {
			t.Fatal(err)
		}
	}

	// 410 Gone after the user disabled and enabled the endpoint again.
	e := endpoint(t, s, "ep_gone", "gone")
	event(t, s, "ev_gone", "gone", t0)
	j := one(e.ID)
	e, _ = s.GetEndpoint(c, e.ID)
	e.Enabled, e.DisabledReason = false, "by hand"
	update(e)
	e.Enabled, e.DisabledReason = true, ""
	update(e)
	if complete(j, 410, "410 Gone").Disabled {
		t.Error("Disabled set by a 410 that did not disable its endpoint")
	}
	if got, err := s.GetEndpoint(c, e.ID); err != nil || !got.Enabled {
		t.Fatalf("endpoint %+v (%v): want enabled (a 410 to a request sent before the user enabled it)", got, err)
	}

	// Failing too long, its URL changed by its user during the attempt.
	e = endpoint(t, s, "ep_moved", "moved")
	e.FailingSince = t0.Add(-48 * time.Hour)
	update(e)
	event(t, s, "ev_moved", "moved", t0)
	j = one(e.ID)
	e.URL = "http://127.0.0.1:1/moved"
	update(e)
	if complete(j, 500, "failing for too long").Disabled {
		t.Error("Disabled set by a completion that did not disable its endpoint")
	}
	if got, err := s.GetEndpoint(c, e.ID); err != nil || !got.Enabled {
		t.Fatalf("endpoint %+v (%v): want enabled (failing for too long at its old URL)", got, err)
	}

	// A first failure, 410 Gone, at the revision it was made to.
	e = endpoint(t, s, "ep_first", "first")
	event(t, s, "ev_first", "first", t0)
	j = one(e.ID)
	if !complete(j, 410, "410 Gone").Disabled {
		t.Error("Disabled not set by a 410 at the endpoint's revision")
	}
	if got, err := s.GetEndpoint(c, e.ID); err != nil || got.Enabled || got.DisabledReason != "410 Gone" {
		t.Fatalf("endpoint %+v (%v): want disabled, 410 Gone", got, err)
	}
}
