package dispatch

import (
	"context"
	"net/http"
	"testing"
)

// TestUserChangeReachesQueued: an endpoint whose user changes its URL
// while a dispatcher holds deliveries of it claimed ahead gets them at
// its new URL once the dispatcher has read it again (endpointRecheck).
// They went to the old URL, as claimed, for as long as their leases
// allowed.
func TestUserChangeReachesQueued(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	old := newReceiver(t, hold(started, answer), status(http.StatusOK))
	moved := newReceiver(t, status(http.StatusOK))
	addEndpoint(t, s, "ep_1", old.URL, t0)
	const events = 3
	for range events {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	done := deliverDueInBackground(d)
	<-started
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	e.URL = moved.URL
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	c.Set(t0.Add(2 * endpointRecheck))
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if o, m := len(old.requests()), len(moved.requests()); o != 1 || m != events-1 {
		t.Errorf("%d requests to the old URL, %d to the new one; want 1 (under way when it changed) and %d", o, m, events-1)
	}
}
