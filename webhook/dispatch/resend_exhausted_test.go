package dispatch

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestResendQueuedNotExhausted: a delivery on the last attempt of its
// schedule, resent while claimed ahead and queued, then failing, is on
// the first attempt of the resend's schedule: pending, and no
// message.attempt.exhausted notice is sent for it (one was, though the
// store left the delivery pending).
func TestResendQueuedNotExhausted(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan string, 1), make(chan struct{})
	var n atomic.Int32
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		// Two failures (the first round), then the second round's first
		// attempt waits and succeeds, and the other fails.
		switch n.Add(1) {
		case 1, 2, 4:
			w.WriteHeader(http.StatusInternalServerError)
		case 3:
			started <- r.Header.Get("webhook-id")
			<-answer
		}
	})
	ops := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	a, b := addEvent(t, s, "t", t0), addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c, func(cfg *Config) {
		cfg.Concurrency = 1
		cfg.NoticeEndpoint = "ep_ops"
		cfg.Policy.Schedule = []time.Duration{0, time.Second}
	})
	deliverDue(t, d, 2)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	c.Set(t0.Add(time.Second))
	done := deliverDueInBackground(d)
	queued := a
	if <-started == a.ID {
		queued = b
	}
	if n, err := s.Resend(context.Background(), queued.ID, "", c.Now()); err != nil || n != 1 {
		t.Fatalf("resend: %d %v", n, err)
	}
	c.Set(t0.Add(2 * time.Second))
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ds, _ := s.ListDeliveries(context.Background(), queued.ID)
	if ds[0].Status != store.StatusPending || ds[0].Attempts != 1 {
		t.Errorf("resent delivery %s after %d attempts, want pending after 1", ds[0].Status, ds[0].Attempts)
	}
	for _, r := range ops.requests() {
		if bytes.Contains(r.body, []byte("message.attempt.exhausted")) {
			t.Errorf("notice %s for the resent delivery, on the first attempt of its new schedule", r.body)
		}
	}
	if st := d.Stats(); st.Exhausted != 0 {
		t.Errorf("stats: %d exhausted, want 0", st.Exhausted)
	}
}
