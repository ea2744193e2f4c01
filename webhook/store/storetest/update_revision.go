package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testUpdateRevision: UpdateEndpoint writes only over the revision it
// was given. A copy read before a completion recorded the endpoint's
// health, or disabled it, is refused (ErrConflict) and changes nothing;
// read again, it is written, and its Revision is then the new one.
// Revision zero writes whatever the row's.
func testUpdateRevision(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	event(t, s, "msg_1", "a", t0)
	stale, err := s.GetEndpoint(c, "ep_1")
	if err != nil {
		t.Fatal(err)
	}
	jobs := claim(t, s, "d1", t0, 10)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d", len(jobs))
	}
	j := jobs[0]
	if err := s.Complete(c, &store.Completion{Owner: "d1", LeaseUntil: j.LeaseUntil, Status: store.StatusFailed, Disable: "410 Gone",
		Attempt: store.Attempt{ID: "atmpt_1", DeliveryID: j.Delivery.ID, EventID: "msg_1", EndpointID: "ep_1", Started: t0, StatusCode: 410}}); err != nil {
		t.Fatal(err)
	}
	stale.Description = "stale"
	if err := s.UpdateEndpoint(c, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("UpdateEndpoint of a copy read before the endpoint was disabled: %v, want ErrConflict", err)
	}
	got, err := s.GetEndpoint(c, "ep_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled || got.DisabledReason != "410 Gone" || got.Description == "stale" {
		t.Fatalf("after a refused update: enabled %v, reason %q, description %q", got.Enabled, got.DisabledReason, got.Description)
	}
	rev := got.Revision
	got.Description = "fresh"
	got.Updated = t0.Add(time.Second)
	if err := s.UpdateEndpoint(c, got); err != nil {
		t.Fatalf("UpdateEndpoint of a fresh copy: %v", err)
	}
	if got.Revision == rev {
		t.Errorf("Revision %d unchanged by UpdateEndpoint", got.Revision)
	}
	again, _ := s.GetEndpoint(c, "ep_1")
	if again.Description != "fresh" || again.Enabled || again.Revision != got.Revision {
		t.Fatalf("after the update: %+v, revision %d", again, got.Revision)
	}
	again.Revision, again.Description = 0, "any"
	if err := s.UpdateEndpoint(c, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale copy again: %v, want ErrConflict", err)
	}
	if err := s.UpdateEndpoint(c, again); err != nil {
		t.Fatalf("UpdateEndpoint with revision 0: %v", err)
	}
	if err := s.UpdateEndpoint(c, &store.Endpoint{ID: "ep_none", Revision: 3}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateEndpoint of no endpoint: %v, want ErrNotFound", err)
	}
}
