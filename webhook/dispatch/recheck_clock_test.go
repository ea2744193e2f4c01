package dispatch

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestUserDisableAfterClockStepBack: the clock steps back after a
// worker read its endpoint again; its user then disables it. The
// dispatcher still reads it again within about endpointRecheck, and
// sends none of the deliveries it holds. It read it again only once its
// clock had passed the last read again (here the 3 held were sent).
func TestUserDisableAfterClockStepBack(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	rcv := newReceiver(t, hold(started, answer), hold(started, answer), status(http.StatusOK))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	for range 5 {
		addEvent(t, s, "t", t0)
	}
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	done := deliverDueInBackground(d)
	<-started
	// The second attempt comes after a read of the endpoint at t0 + 10 s.
	c.Set(t0.Add(10 * time.Second))
	answer <- struct{}{}
	<-started
	c.Set(t0.Add(2 * time.Second))
	e, _ := s.GetEndpoint(context.Background(), "ep_1")
	e.Enabled, e.DisabledReason = false, "disabled through the API"
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 2 {
		t.Errorf("%d requests to the endpoint, %d after its user disabled it; want 2 (those before)", n, n-2)
	}
}
