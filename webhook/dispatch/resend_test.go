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

// TestResendWakesRun: a running dispatcher whose poll interval is an
// hour attempts a resent delivery without waiting for its next poll,
// both when the resend comes while the delivery's attempt is under way
// (it is due once that attempt is recorded, which wakes the dispatcher)
// and when it comes after (the API's Notify wakes it).
func TestResendWakesRun(t *testing.T) {
	s := sqliteStore(t)
	in, release, again := make(chan struct{}), make(chan struct{}), make(chan struct{}, 10)
	r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		close(in)
		<-release
		w.WriteHeader(http.StatusOK)
	}, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		again <- struct{}{}
	})
	addEndpoint(t, s, "ep_1", r.URL, time.Now())
	ev := addEvent(t, s, "t", time.Now())
	// (Its leases, 20 min, are not what wakes it either.)
	d, err := New(Config{Store: s, Addresses: loopback, PollInterval: time.Hour, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer run(t, d)()
	resend := func() {
		t.Helper()
		if n, err := s.Resend(context.Background(), ev.ID, "", time.Now()); err != nil || n != 1 {
			t.Fatalf("resend: %d %v", n, err)
		}
		d.Notify() // as the API does
	}
	await := func(what string) {
		t.Helper()
		select {
		case <-again:
		case <-time.After(time.Minute):
			t.Fatalf("%s: not attempted again in a minute (poll interval 1 h, lease 20 min); stats %+v", what, d.Stats())
		}
	}
	<-in
	resend()
	close(release)
	await("resent during its attempt")
	// Once that attempt is recorded, a resend makes it due at once.
	for {
		ds, err := s.ListDeliveries(context.Background(), ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Status == store.StatusSucceeded {
			break
		}
		time.Sleep(time.Millisecond)
	}
	resend()
	await("resent after its attempts")
}
