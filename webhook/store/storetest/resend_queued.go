package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testResendQueued: a delivery leased and resent before its attempt
// started (claimed ahead, queued) is left as that attempt, the first of
// the resend's schedule, leads (ResentStatus: here a retry, where the
// old schedule's last attempt failed for good), not due again; one
// resent after its attempt started is due again at the resend's time,
// with no attempts. Both one by one and in one batch.
func testResendQueued(t *testing.T, s store.Store) {
	c := ctx(t)
	e := endpoint(t, s, "ep_rq")
	for round, batch := range []bool{false, true} {
		before := event(t, s, fmt.Sprint("ev_rq_before", round), "t", t0)
		during := event(t, s, fmt.Sprint("ev_rq_during", round), "t", t0)
		jobs := claim(t, s, "a", t0, 10)
		if len(jobs) != 2 {
			t.Fatalf("round %d: claimed %d, want 2", round, len(jobs))
		}
		if _, err := s.Resend(c, before.ID, "", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resend(c, during.ID, "", t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		var cs []*store.Completion
		for _, j := range jobs {
			cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, LeaseStarted: t0.Add(2 * time.Second), Status: store.StatusFailed,
				ResentStatus: store.StatusPending, ResentNextAttempt: t0.Add(time.Hour),
				Attempt: store.Attempt{ID: "atmpt_" + j.Delivery.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
					Started: t0.Add(2 * time.Second), Duration: time.Millisecond, StatusCode: 500}})
		}
		if batch {
			if err := s.Complete(c, cs...); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, cp := range cs {
				if err := s.Complete(c, cp); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, want := range []struct {
			ev       string
			attempts int
			next     time.Time
		}{{before.ID, 1, t0.Add(time.Hour)}, {during.ID, 0, t0.Add(3 * time.Second)}} {
			ds, err := s.ListDeliveries(c, want.ev)
			if err != nil || len(ds) != 1 {
				t.Fatalf("round %d: deliveries %+v (%v)", round, ds, err)
			}
			if d := ds[0]; d.Status != store.StatusPending || d.Attempts != want.attempts || !d.NextAttempt.Equal(want.next) {
				t.Errorf("round %d: %s: %s after %d attempts, due %v; want pending after %d, due %v",
					round, want.ev, d.Status, d.Attempts, d.NextAttempt, want.attempts, want.next)
			}
		}
		// (Neither is due at t0: the next round claims only its own.)
		for _, cp := range cs {
			if want := cp.Attempt.EventID == during.ID; cp.Resent != want {
				t.Errorf("round %d: %s: Resent %v, want %v", round, cp.Attempt.EventID, cp.Resent, want)
			}
		}
	}
}
