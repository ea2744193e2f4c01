package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testPurgeResend: old events resent (all their deliveries, or one
// endpoint's) and recovered while purges delete old events: each either
// is purged first, and the resend finds nothing (ErrNotFound; Recover
// counts none), or is scheduled, and then stays, with its delivery
// pending, however the purges go on. No call fails otherwise.
func testPurgeResend(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	const events = 240
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	ids := make([]string, events)
	for i := range events {
		ids[i] = event(t, s, fmt.Sprintf("msg_%03d", i), "t", at(i)).ID
	}
	jobs, err := s.Claim(c, store.ClaimRequest{Owner: "a", Now: t0.Add(time.Hour), Lease: time.Minute, Limit: events})
	if err != nil || len(jobs) != events {
		t.Fatalf("claimed %d: %v", len(jobs), err)
	}
	var cs []*store.Completion
	for i, j := range jobs {
		status := store.StatusSucceeded
		if i%2 == 1 {
			status = store.StatusFailed // (Recover makes only failed deliveries pending)
		}
		cs = append(cs, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: status,
			Attempt: store.Attempt{ID: "atmpt_" + j.Event.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_1", Started: t0, StatusCode: 500}})
	}
	if err := s.Complete(c, cs...); err != nil {
		t.Fatal(err)
	}
	// Batches of batch events, the oldest first: a purge of the batch
	// and, at the same moment, each of its events resent to every endpoint
	// (i%4 == 0), to ep_1 (i%4 == 2), or recovered (odd i, failed) by a
	// window holding it alone.
	now := t0.Add(2 * time.Hour)
	scheduled := make([]bool, events)
	purged := 0
	const batch = 8
	for b := 0; b < events; b += batch {
		var racers []func()
		for i := b; i < b+batch; i++ {
			racers = append(racers, func() {
				var n int
				var err error
				switch i % 4 {
				case 0:
					n, err = s.Resend(c, ids[i], "", now)
				case 2:
					n, err = s.Resend(c, ids[i], "ep_1", now)
				default:
					n, err = s.Recover(c, "ep_1", at(i), at(i).Add(time.Nanosecond), now)
				}
				switch {
				case errors.Is(err, store.ErrNotFound) && i%2 == 0:
				case err != nil:
					t.Errorf("%s: resent or recovered during a purge: %v", ids[i], err)
				case n == 1:
					scheduled[i] = true
				case n != 0 || i%2 == 0:
					t.Errorf("%s: %d deliveries scheduled, want 1", ids[i], n)
				}
			})
		}
		together(append(racers, func() {
			n, err := s.Purge(c, at(b+batch), batch)
			if err != nil {
				t.Errorf("a purge during resends: %v", err)
			}
			purged += n
		})...)
	}
	kept := 0
	for i, id := range ids {
		ds, err := s.ListDeliveries(c, id)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.GetEvent(c, id)
		switch {
		case err == nil:
			kept++
		case !errors.Is(err, store.ErrNotFound):
			t.Fatal(err)
		case scheduled[i]:
			t.Errorf("%s: purged after its resend was scheduled", id)
			continue
		}
		if scheduled[i] && (len(ds) != 1 || ds[0].Status != store.StatusPending) {
			t.Errorf("%s scheduled again: deliveries %+v, want one pending", id, ds)
		}
	}
	if kept+purged != events {
		t.Errorf("%d events kept, %d purged; want %d in all", kept, purged, events)
	}
}
