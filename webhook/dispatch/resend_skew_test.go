package dispatch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
	"github.com/brokerless/brokerless/webhook/store/pgtest"
)

// TestResendDuringAttemptSkewedPostgres: a delivery resent while its
// attempt is under way is attempted again after it, though the
// dispatcher's clock is 30 s ahead of the resending process's. Compared
// by their two clocks, the resend came "before" the attempt started:
// it was taken as the attempt it asked for, and vanished (1 request).
func TestResendDuringAttemptSkewedPostgres(t *testing.T) {
	s, err := store.Open(context.Background(), pgtest.Start(t, "fsync=off").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	started, answer := make(chan struct{}, 1), make(chan struct{})
	r := newReceiver(t, hold(started, answer), status(http.StatusOK))
	now := time.Now()
	addEndpoint(t, s, "ep_1", r.URL, now)
	ev := addEvent(t, s, "t", now)
	d, err := New(Config{Store: s, Addresses: loopback, Timeout: 5 * time.Second,
		Now: func() time.Time { return time.Now().Add(30 * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	done := deliverDueInBackground(d)
	<-started
	if n, err := s.Resend(context.Background(), ev.ID, "", time.Now()); err != nil || n != 1 {
		t.Fatalf("resend: %d %v", n, err)
	}
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(r.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (the resend, made during the first attempt, asks for another after it)", n)
	}
}
