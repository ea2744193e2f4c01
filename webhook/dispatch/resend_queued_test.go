package dispatch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestResendQueued: a delivery resent while the dispatcher holds it
// claimed, queued behind another attempt and not yet started, is
// attempted once: the attempt that follows the resend is the one it
// asked for. It was attempted twice, the resend taken as made during
// the first (the store sees both as leased).
func TestResendQueued(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	rcv := newReceiver(t, hold(started, answer), status(http.StatusOK))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	addEvent(t, s, "t", t0)
	queued := addEvent(t, s, "t", t0.Add(time.Millisecond))
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Concurrency = 1 })
	c.Set(t0.Add(time.Second))
	done := deliverDueInBackground(d)
	<-started
	if n, err := s.Resend(context.Background(), queued.ID, "", c.Now()); err != nil || n != 1 {
		t.Fatalf("resend: %d %v", n, err)
	}
	c.Set(t0.Add(2 * time.Second))
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one per event: the queued one's attempt follows its resend)", n)
	}
	ds, _ := s.ListDeliveries(context.Background(), queued.ID)
	if ds[0].Status != store.StatusSucceeded || ds[0].Attempts != 1 {
		t.Errorf("resent delivery %s after %d attempts, want succeeded after 1", ds[0].Status, ds[0].Attempts)
	}
}
