package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/brokerless/brokerless/webhook/store"
)

// testDeleteEndpointCompleting: an endpoint deleted while attempts to it
// are being recorded (one by one, and in batches) is deleted: neither
// the deletion nor a completion fails, a completion either is refused
// (ErrLeaseLost) or is recorded and then deleted with the endpoint, and
// no delivery or attempt of the endpoint is left. Rounds of a deletion
// racing completions that change the endpoint's health (each of those
// writes the endpoint's row too), and an endpoint left standing whose
// completions go on meanwhile.
func testDeleteEndpointCompleting(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_keep")
	const rounds, events = 20, 12
	for r := range rounds {
		id := fmt.Sprint("ep_del", r)
		endpoint(t, s, id)
		jobs, now := claimedRound(t, s, r, events, id, "ep_keep")
		var evs []string
		for _, j := range jobs {
			if !slices.Contains(evs, j.Event.ID) {
				evs = append(evs, j.Event.ID)
			}
		}
		completion := func(i int, j *store.Job) *store.Completion {
			ok := i%2 == 0 // health changing at every attempt
			status := store.StatusSucceeded
			if !ok {
				status = store.StatusFailed
			}
			return &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: status, EndpointOK: ok,
				Attempt: store.Attempt{ID: fmt.Sprintf("atmpt_%d_%d", r, i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: j.Endpoint.ID,
					Started: now, StatusCode: 200 + 300*(i%2)}}
		}
		// All while the endpoint is deleted.
		var racers []func()
		for _, cs := range completionBatches(jobs, 4, completion) {
			racers = append(racers, func() {
				if err := s.Complete(c, cs...); err != nil && !errors.Is(err, store.ErrLeaseLost) {
					t.Errorf("round %d: a completion while the endpoint is deleted: %v", r, err)
				}
				for _, cp := range cs {
					if cp.LeaseLost && cp.Attempt.EndpointID != id {
						t.Errorf("round %d: %s to %s refused: lease lost", r, cp.Attempt.ID, cp.Attempt.EndpointID)
					}
				}
			})
		}
		together(append(racers, func() {
			if err := s.DeleteEndpoint(c, id); err != nil {
				t.Errorf("round %d: deleting the endpoint while attempts to it are recorded: %v", r, err)
			}
		})...)
		if t.Failed() {
			return
		}
		for _, ev := range evs {
			ds, err := s.ListDeliveries(c, ev)
			if err != nil {
				t.Fatal(err)
			}
			as, err := s.ListAttempts(c, ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].EndpointID != "ep_keep" || ds[0].Attempts != 1 || len(as) != 1 || as[0].EndpointID != "ep_keep" {
				t.Fatalf("round %d, %s: deliveries %+v, attempts %+v; want ep_keep's alone, with its attempt", r, ev, ds, as)
			}
		}
	}
}
