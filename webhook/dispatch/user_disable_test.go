package dispatch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestUserDisableStopsQueued: an endpoint its user disables (through
// the API or the console: UpdateEndpoint) while a dispatcher holds
// deliveries of it claimed ahead gets none of them once the dispatcher
// has had time to see the disable (endpointRecheck): they are paused
// with its others and delivered once it is enabled again. A running
// dispatcher never looked: it sent every delivery it held (up to
// Concurrency + QueueDepth, for as long as their leases allowed) to the
// endpoint its user had just disabled.
func TestUserDisableStopsQueued(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	rcv := newReceiver(t, hold(started, answer), status(http.StatusOK))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	const events = 5
	for range events {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	done := deliverDueInBackground(d)
	<-started
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	e.Enabled, e.DisabledReason = false, "disabled through the API"
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	c.Set(t0.Add(2 * endpointRecheck))
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("%d requests to the endpoint, %d after its user disabled it; want 1 (the one under way)", n, n-1)
	}
	evs, _ := s.ListEvents(context.Background(), time.Time{}, "", 100)
	paused := 0
	for _, ev := range evs {
		ds, _ := s.ListDeliveries(context.Background(), ev.ID)
		if ds[0].Status == store.StatusPaused {
			paused++
		}
	}
	if paused != events-1 {
		t.Fatalf("%d deliveries paused, want %d", paused, events-1)
	}
	e, _ = s.GetEndpoint(context.Background(), "ep_1")
	e.Enabled, e.DisabledReason = true, ""
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	deliverDue(t, d, events-1)
}
