package storetest

import (
	"errors"
	"testing"

	"github.com/brokerless/brokerless/webhook/store"
)

// testChangeEndpoint: ChangeEndpoint applies its function to the
// endpoint as stored and writes it, raising its revision and pausing its
// deliveries when it disables it; an error from the function writes
// nothing; an unknown endpoint is ErrNotFound.
func testChangeEndpoint(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "a", t0)
	before, err := s.GetEndpoint(c, "ep_1")
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.ChangeEndpoint(c, "ep_1", func(e *store.Endpoint) error {
		e.Description, e.Enabled, e.DisabledReason = "changed", false, "by its user"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetEndpoint(c, "ep_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != "changed" || got.Enabled || got.Revision <= before.Revision || e.Revision != got.Revision {
		t.Fatalf("after the change: %+v (returned revision %d, was %d)", got, e.Revision, before.Revision)
	}
	ds, err := s.ListDeliveries(c, "msg_1")
	if err != nil || len(ds) != 1 || ds[0].Status != store.StatusPaused {
		t.Fatalf("deliveries %+v (%v), want the one paused", ds, err)
	}
	refused := errors.New("refused")
	if _, err := s.ChangeEndpoint(c, "ep_1", func(e *store.Endpoint) error {
		e.Description = "not written"
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("change refused by its function: %v", err)
	}
	if again, _ := s.GetEndpoint(c, "ep_1"); again.Description != "changed" || again.Revision != got.Revision {
		t.Fatalf("a refused change wrote: %+v", again)
	}
	if _, err := s.ChangeEndpoint(c, "ep_none", func(*store.Endpoint) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("change of no endpoint: %v, want ErrNotFound", err)
	}
}
