package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testPurgeInFlight: an endpoint disabled while attempts to it are under
// way pauses their deliveries, so Purge may take their events while the
// attempts are recorded (one by one, and in batches). Neither fails (on
// PostgreSQL a completion committed between Purge's deletion of the
// attempts and of the deliveries failed Purge on the attempts' foreign
// key): each completion is either recorded before its event is purged,
// or refused (ErrLeaseLost) and its event gone, with nothing of it left.
func testPurgeInFlight(t *testing.T, s store.Store) {
	c := ctx(t)
	const rounds, events = 20, 12
	for r := range rounds {
		e := endpoint(t, s, fmt.Sprint("ep_pause", r))
		jobs, now := claimedRound(t, s, r, events, e.ID)
		u := *e
		u.Enabled = false
		if err := s.UpdateEndpoint(c, &u); err != nil {
			t.Fatal(err)
		}
		completion := func(i int, j *store.Job) *store.Completion {
			status := store.StatusSucceeded
			if i%2 == 1 {
				status = store.StatusPending
			}
			return &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: status, EndpointOK: i%2 == 0, NextAttempt: now.Add(time.Hour),
				Attempt: store.Attempt{ID: fmt.Sprintf("atmpt_%d_%d", r, i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
					Started: now, StatusCode: 200 + 300*(i%2)}}
		}
		batches := completionBatches(jobs, 3, completion)
		var racers []func()
		for _, cs := range batches {
			racers = append(racers, func() {
				if err := s.Complete(c, cs...); err != nil && !errors.Is(err, store.ErrLeaseLost) {
					t.Errorf("round %d: a completion while its event is purged: %v", r, err)
				}
			})
		}
		for range 2 {
			racers = append(racers, func() {
				if _, err := s.Purge(c, now.Add(time.Hour), 1000); err != nil {
					t.Errorf("round %d: purging while attempts are recorded: %v", r, err)
				}
			})
		}
		together(racers...)
		if t.Failed() {
			return
		}
		for _, cs := range batches {
			for _, cp := range cs {
				ds, err := s.ListDeliveries(c, cp.Attempt.EventID)
				if err != nil {
					t.Fatal(err)
				}
				as, err := s.ListAttempts(c, cp.Attempt.EventID)
				if err != nil {
					t.Fatal(err)
				}
				_, gerr := s.GetEvent(c, cp.Attempt.EventID)
				gone := errors.Is(gerr, store.ErrNotFound) && len(ds) == 0 && len(as) == 0
				kept := gerr == nil && len(ds) == 1 && ds[0].Attempts == 1 && len(as) == 1
				if cp.LeaseLost && !gone || !gone && !kept {
					t.Fatalf("round %d, %s (lease lost %v): event %v, deliveries %+v, attempts %+v; want it purged, or recorded",
						r, cp.Attempt.EventID, cp.LeaseLost, gerr, ds, as)
				}
			}
		}
	}
}
