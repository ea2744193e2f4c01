package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testRecoverRacing: a Recover of an endpoint whose attempts are under
// way (marking their deliveries) at the same time as the endpoint is
// disabled (pausing them) and as one of its attempts disables it:
// neither fails (on PostgreSQL two statements writing the same
// deliveries in different orders deadlocked, 40P01, one killed).
func testRecoverRacing(t *testing.T, s store.Store) {
	c := ctx(t)
	const rounds, events = 20, 40
	for r := range rounds {
		e := endpoint(t, s, fmt.Sprint("ep_rec", r))
		jobs, now := claimedRound(t, s, r, events, e.ID)
		j := jobs[len(jobs)-1]
		disabling := &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusFailed, Disable: "410 Gone",
			Attempt: store.Attempt{ID: fmt.Sprintf("atmpt_rec_%d", r), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
				Started: now, StatusCode: 410}}
		together(func() {
			if _, err := s.Recover(c, e.ID, t0.Add(-time.Hour), t0.Add(time.Hour), now); err != nil {
				t.Errorf("round %d: recover while the endpoint is disabled: %v", r, err)
			}
		}, func() {
			u := *e
			// (Revision 0: written over whatever the completions wrote.)
			u.Enabled, u.Updated, u.Revision = false, now, 0
			if err := s.UpdateEndpoint(c, &u); err != nil {
				t.Errorf("round %d: disabling the endpoint during a recover: %v", r, err)
			}
		}, func() {
			if err := s.Complete(c, disabling); err != nil {
				t.Errorf("round %d: an attempt disabling the endpoint during a recover: %v", r, err)
			}
		})
		if t.Failed() {
			return
		}
	}
}
