package dispatch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestResendDuringAttempt: an event resent (the API's resend) while its
// attempt is under way is attempted again after it, though that attempt
// succeeded, with the same webhook-id.
func TestResendDuringAttempt(t *testing.T) {
	s := sqliteStore(t)
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	in, release := make(chan struct{}), make(chan struct{})
	r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		close(in)
		<-release
		w.WriteHeader(http.StatusOK)
	}, status(http.StatusOK))
	addEndpoint(t, s, "ep_1", r.URL, c.Now())
	ev := addEvent(t, s, "t", c.Now())
	d := newDispatcher(t, s, c)
	done := make(chan int, 1)
	go func() {
		n, err := d.DeliverDue(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- n
	}()
	<-in
	n, err := s.Resend(context.Background(), ev.ID, "", c.Now())
	close(release)
	if err != nil || n != 1 {
		t.Fatalf("resend: %d %v", n, err)
	}
	if n := <-done; n != 2 {
		t.Fatalf("%d attempts, want 2 (the one under way, then the one resent)", n)
	}
	got := r.requests()
	if len(got) != 2 || got[1].header.Get("webhook-id") != ev.ID {
		t.Fatalf("%d requests, want 2 with webhook-id %s", len(got), ev.ID)
	}
	ds, err := s.ListDeliveries(context.Background(), ev.ID)
	if err != nil || len(ds) != 1 || ds[0].Status != store.StatusSucceeded || ds[0].Attempts != 1 {
		t.Fatalf("delivery %+v %v, want succeeded at its new schedule's first attempt", ds, err)
	}
}
