package dispatch

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// TestReenableDuringAttempt: an endpoint failing for longer than
// DisableAfter is enabled again by its user (which clears its failing
// since) while an attempt claimed before is under way; that attempt
// fails. Its completion, decided on the failing since read at the claim,
// disabled the endpoint again, though its run of failures had just
// started anew: it must leave it enabled, failing since that attempt.
// Nor is an endpoint.disabled notice sent, or a disable counted.
func TestReenableDuringAttempt(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		hold(started, answer)(w, r)
		w.WriteHeader(http.StatusInternalServerError)
	})
	ops := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	e, err := s.GetEndpoint(context.Background(), "ep_1")
	if err != nil {
		t.Fatal(err)
	}
	e.FailingSince = t0.Add(-2 * time.Hour)
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	addEvent(t, s, "t", t0)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.Policy.DisableAfter = time.Hour; cfg.NoticeEndpoint = "ep_ops" })
	done := deliverDueInBackground(d)
	<-started
	disableThenEnable(t, s, "ep_1")
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetEndpoint(context.Background(), "ep_1")
	if !got.Enabled {
		t.Fatalf("endpoint disabled again (%q) by an attempt claimed before the user enabled it", got.DisabledReason)
	}
	if !got.FailingSince.Equal(t0) {
		t.Errorf("failing since %v, want %v (the attempt after the enable)", got.FailingSince, t0)
	}
	noDisableReported(t, d, ops)
	ds, _ := s.ListDeliveries(context.Background(), mustOnlyEvent(t, s).ID)
	if ds[0].Status != store.StatusPending {
		t.Errorf("delivery %s, want pending", ds[0].Status)
	}
}

func mustOnlyEvent(t *testing.T, s store.Store) *store.Event {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), time.Time{}, "", 2)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v (%v), want 1", evs, err)
	}
	return evs[0]
}

// TestReenableDuringGone: an endpoint is disabled and enabled again by
// its user while an attempt made before is under way; the endpoint
// answers that attempt 410 Gone. The answer is to a request sent before
// the enable: its completion disabled the endpoint again, the user's
// enable undone. It must leave the endpoint enabled (the delivery
// itself failed for good), with no endpoint.disabled notice or disable
// counted.
func TestReenableDuringGone(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	started, answer := make(chan struct{}, 1), make(chan struct{})
	rcv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		hold(started, answer)(w, r)
		w.WriteHeader(http.StatusGone)
	})
	ops := newReceiver(t, status(200))
	addEndpoint(t, s, "ep_1", rcv.URL, t0)
	addEvent(t, s, "t", t0)
	addEndpoint(t, s, "ep_ops", ops.URL, t0)
	d := newDispatcher(t, s, c, func(cfg *Config) { cfg.NoticeEndpoint = "ep_ops" })
	done := deliverDueInBackground(d)
	<-started
	disableThenEnable(t, s, "ep_1")
	close(answer)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetEndpoint(context.Background(), "ep_1")
	if !got.Enabled {
		t.Fatalf("endpoint disabled again (%q) by a 410 answering an attempt made before the user enabled it", got.DisabledReason)
	}
	noDisableReported(t, d, ops)
	ds, _ := s.ListDeliveries(context.Background(), mustOnlyEvent(t, s).ID)
	if ds[0].Status != store.StatusFailed {
		t.Errorf("delivery %s, want failed (410 Gone)", ds[0].Status)
	}
}

// disableThenEnable disables endpoint id and enables it again, as its
// user does through the API or the console (enabling clears its
// failing since).
func disableThenEnable(t *testing.T, s store.Store, id string) {
	t.Helper()
	e, err := s.GetEndpoint(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	e.Enabled, e.DisabledReason = false, "disabled through the API"
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	e.Enabled, e.DisabledReason, e.FailingSince = true, "", time.Time{}
	if err := s.UpdateEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// noDisableReported checks that d sent no endpoint.disabled notice to
// ops and counted no disable.
func noDisableReported(t *testing.T, d *Dispatcher, ops *receiver) {
	t.Helper()
	if n := len(ops.requests()); n != 0 {
		t.Errorf("%d endpoint.disabled notices for the endpoint left enabled, want 0", n)
	}
	if st := d.Stats(); st.Disabled != 0 {
		t.Errorf("stats: %d endpoints disabled, want 0", st.Disabled)
	}
}
