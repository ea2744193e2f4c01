package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testUpdateEndpointCompleting: an endpoint disabled while attempts to
// it are being recorded (one by one, and in batches), the attempts
// changing the endpoint's health (each writes the endpoint's row after
// its delivery's, where the update writes the endpoint's row, then its
// deliveries'): neither the update nor a completion fails (on
// PostgreSQL, a deadlock, 40P01, killed one of them), every attempt is
// recorded, and the deliveries left to retry are paused.
func testUpdateEndpointCompleting(t *testing.T, s store.Store) {
	c := ctx(t)
	const rounds, events = 30, 12
	for r := range rounds {
		e := endpoint(t, s, fmt.Sprint("ep_upd", r))
		jobs, now := claimedRound(t, s, r, events, e.ID)
		want := map[string]string{} // delivery id: its status after the round
		completion := func(i int, j *store.Job) *store.Completion {
			ok := i%2 == 0 // health changing at every attempt
			status := store.StatusSucceeded
			want[j.Delivery.ID] = status
			if !ok {
				status = store.StatusPending
				want[j.Delivery.ID] = store.StatusPaused
			}
			return &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: status, EndpointOK: ok, NextAttempt: now.Add(time.Hour),
				Attempt: store.Attempt{ID: fmt.Sprintf("atmpt_%d_%d", r, i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
					Started: now, StatusCode: 200 + 300*(i%2)}}
		}
		var racers []func()
		for _, cs := range completionBatches(jobs, 3, completion) {
			racers = append(racers, func() {
				if err := s.Complete(c, cs...); err != nil {
					t.Errorf("round %d: a completion while the endpoint is updated: %v", r, err)
				}
			})
		}
		together(append(racers, func() {
			u := *e
			// (Revision 0: written over whatever the completions wrote.)
			u.Enabled, u.Description, u.Updated, u.Revision = false, "disabled", now, 0
			if err := s.UpdateEndpoint(c, &u); err != nil {
				t.Errorf("round %d: disabling the endpoint while attempts to it are recorded: %v", r, err)
			}
		})...)
		if t.Failed() {
			return
		}
		for _, j := range jobs {
			ds, err := s.ListDeliveries(c, j.Event.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].Attempts != 1 || ds[0].Status != want[ds[0].ID] {
				t.Fatalf("round %d, %s: deliveries %+v; want one, attempted once, %s", r, j.Event.ID, ds, want[j.Delivery.ID])
			}
		}
	}
}
