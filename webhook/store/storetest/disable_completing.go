package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testDisableCompleting: attempts to one endpoint recorded at once (one
// by one, and in batches), one of them disabling the endpoint (410 Gone)
// while the others change its health: none of the completions fails (on
// PostgreSQL the disabling one, holding the endpoint's row, waited to
// pause a delivery another held, which waited for the endpoint's row to
// write its health: a deadlock, 40P01), every attempt is recorded, and
// the deliveries left to retry are paused.
func testDisableCompleting(t *testing.T, s store.Store) {
	c := ctx(t)
	const rounds, events = 30, 12
	for r := range rounds {
		e := endpoint(t, s, fmt.Sprint("ep_dis", r))
		jobs, now := claimedRound(t, s, r, events, e.ID)
		want := map[string]string{}  // delivery id: its status after the round
		disabler := r % (events / 2) // one of the completions recorded one by one
		completion := func(i int, j *store.Job) *store.Completion {
			ok := i%2 == 0 // health changing at every attempt
			cp := &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusSucceeded, EndpointOK: ok, NextAttempt: now.Add(time.Hour),
				Attempt: store.Attempt{ID: fmt.Sprintf("atmpt_%d_%d", r, i), DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: e.ID,
					Started: now, StatusCode: 200 + 300*(i%2)}}
			switch {
			case i == disabler:
				cp.Status, cp.EndpointOK, cp.Disable, cp.Attempt.StatusCode = store.StatusFailed, false, "410 Gone", 410
			case !ok:
				cp.Status = store.StatusPending
			}
			want[j.Delivery.ID] = cp.Status
			if cp.Status == store.StatusPending {
				want[j.Delivery.ID] = store.StatusPaused
			}
			return cp
		}
		var racers []func()
		for _, cs := range completionBatches(jobs, 3, completion) {
			racers = append(racers, func() {
				if err := s.Complete(c, cs...); err != nil {
					t.Errorf("round %d: a completion while another disables the endpoint: %v", r, err)
				}
			})
		}
		together(racers...)
		if t.Failed() {
			return
		}
		if got, err := s.GetEndpoint(c, e.ID); err != nil || got.Enabled || got.DisabledReason != "410 Gone" {
			t.Fatalf("round %d: endpoint %+v (%v), want disabled (410 Gone)", r, got, err)
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
