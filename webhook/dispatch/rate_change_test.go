package dispatch

import (
	"net/http"
	"testing"
	"time"
)

// TestRateLimitReachesQueued: an endpoint given a rate limit (0 → 1 a
// second) while a dispatcher holds deliveries of it claimed ahead, with
// no slot (it had no limit then), gets no more than its limit allows
// once the dispatcher has read it again (endpointRecheck): the queued
// deliveries are released, to be claimed again with slots, not sent
// all at once.
func TestRateLimitReachesQueued(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	rcv := newReceiver(t, hold(started, answer), status(http.StatusOK))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	const events = 6
	for range events {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	done := deliverDueInBackground(d)
	<-started
	rateLimited(t, s, "ep_1", 1)
	c.Set(t0.Add(2 * endpointRecheck))
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// One under way when the limit came, and one slot (the 1 s burst of
	// a limit of 1 a second) at t0 + 2 s.
	if got := len(rcv.requests()); got > 2 {
		t.Errorf("%d requests at once to an endpoint limited to 1/s while its deliveries were queued; want at most 2", got)
	}
	// The others are pending, not lost: a second later one more goes.
	c.Set(t0.Add(2*endpointRecheck + 1100*time.Millisecond))
	deliverDue(t, d, 1)
	if got := len(rcv.requests()); got != 3 {
		t.Errorf("%d requests after another second, want 3", got)
	}
}
