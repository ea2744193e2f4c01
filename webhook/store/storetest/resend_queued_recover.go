package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testResendQueuedRecover: a delivery resent while claimed ahead (its
// attempt not started), then recovered while its attempt is under way,
// an attempt failing for good even as the first of the resend's
// schedule (410 Gone, disabling its endpoint: the row path; attempts
// run out, completed with another: the bulk path on PostgreSQL) is left as the Recover asks:
// due again at its time, with no attempts (paused with the endpoint
// disabled), not failed.
func testResendQueuedRecover(t *testing.T, s store.Store) {
	c := ctx(t)
	e := endpoint(t, s, "ep_rqr")
	for round, gone := range []bool{false, true} {
		ev := event(t, s, fmt.Sprint("ev_rqr", round), "t", t0)
		if !gone {
			// (Completed with another: the bulk path on PostgreSQL.)
			event(t, s, "ev_rqr_other", "t", t0)
		}
		jobs := claim(t, s, "a", t0, 10)
		if want := map[bool]int{false: 2, true: 1}[gone]; len(jobs) != want {
			t.Fatalf("round %d: claimed %d, want %d", round, len(jobs), want)
		}
		var (
			j  *store.Job
			cs []*store.Completion
		)
		for _, jb := range jobs {
			if jb.Event.ID == ev.ID {
				j = jb
				continue
			}
			cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: jb.LeaseUntil, LeaseStarted: t0.Add(2 * time.Second), Status: store.StatusPending, NextAttempt: t0.Add(time.Hour),
				Attempt: store.Attempt{ID: "atmpt_" + jb.Delivery.ID, DeliveryID: jb.Delivery.ID, EventID: jb.Event.ID, EndpointID: e.ID,
					Started: t0.Add(2 * time.Second), Duration: time.Millisecond, StatusCode: 500}})
		}
		if _, err := s.Resend(c, ev.ID, "", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		recovered := t0.Add(3 * time.Second)
		if _, err := s.Recover(c, e.ID, t0.Add(-time.Hour), t0.Add(time.Hour), recovered); err != nil {
			t.Fatal(err)
		}
		cp := &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, LeaseStarted: t0.Add(2 * time.Second), Status: store.StatusFailed, ResentStatus: store.StatusFailed,
			Attempt: store.Attempt{ID: "atmpt_" + j.Delivery.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
				Started: t0.Add(2 * time.Second), Duration: time.Millisecond, StatusCode: 500}}
		want := store.StatusPending
		if gone {
			cp.Attempt.StatusCode, cp.Disable, want = 410, "gone", store.StatusPaused
		}
		if err := s.Complete(c, append(cs, cp)...); err != nil {
			t.Fatal(err)
		}
		ds, err := s.ListDeliveries(c, ev.ID)
		if err != nil || len(ds) != 1 {
			t.Fatalf("round %d: deliveries %+v (%v)", round, ds, err)
		}
		if d := ds[0]; d.Status != want || d.Attempts != 0 || !d.NextAttempt.Equal(recovered) {
			t.Errorf("round %d: %s after %d attempts, due %v; want %s after 0, due %v (the Recover made during the attempt)",
				round, d.Status, d.Attempts, d.NextAttempt, want, recovered)
		}
		// (Not due at t0: the next round claims only its own.)
	}
}
