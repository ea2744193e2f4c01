package dispatch

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestDisableKeepsQueued: when an attempt disables its endpoint (410
// Gone here), the deliveries of that endpoint the dispatcher claimed
// ahead and has not attempted yet are not sent to it: they are released
// and paused with the endpoint's other pending deliveries, and delivered
// once it is enabled again. They were attempted after the disable, each
// getting its own 410 and failing for good, so enabling the endpoint
// brought none of them back.
func TestDisableKeepsQueued(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	var gone atomic.Bool
	gone.Store(true)
	rcv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
		}
	})
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	const events = 6
	for range events {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	if _, err := d.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("%d requests to the endpoint that answered 410 Gone, want 1", n)
	}
	evs, _ := s.ListEvents(context.Background(), t0.Add(1), "", 100)
	failed, paused := 0, 0
	for _, ev := range evs {
		ds, _ := s.ListDeliveries(context.Background(), ev.ID)
		switch ds[0].Status {
		case store.StatusFailed:
			failed++
		case store.StatusPaused:
			paused++
		}
	}
	if failed != 1 || paused != events-1 {
		t.Fatalf("after the 410: %d deliveries failed, %d paused; want 1 failed, %d paused", failed, paused, events-1)
	}
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	e.Enabled, e.DisabledReason = true, ""
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	gone.Store(false)
	deliverDue(t, d, events-1)
}
