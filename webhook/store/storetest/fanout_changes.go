package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testFanOutChanges: every change of the endpoints is followed by the
// next event's deliveries: a filter changed, an endpoint disabled (by
// UpdateEndpoint, or by a completion) or enabled, deleted, created. An
// event listing an endpoint twice gets one delivery.
func testFanOutChanges(t *testing.T, s store.Store) {
	c := ctx(t)
	a := endpoint(t, s, "ep_a", "x.*")
	endpoint(t, s, "ep_b")
	n := 0
	check := func(when, typ string, want ...string) {
		t.Helper()
		n++
		ev := event(t, s, fmt.Sprint("msg_", n), typ, t0)
		ds, err := s.ListDeliveries(c, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range ds {
			got = append(got, d.EndpointID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: an event of type %s delivered to %v, want %v", when, typ, got, want)
		}
	}
	check("at first", "x.1", "ep_a", "ep_b")
	check("at first", "y.1", "ep_b")
	a.EventTypes = []string{"y.*"}
	if err := s.UpdateEndpoint(c, a); err != nil {
		t.Fatal(err)
	}
	check("filter changed", "x.1", "ep_b")
	check("filter changed", "y.1", "ep_a", "ep_b")
	a.Enabled = false
	if err := s.UpdateEndpoint(c, a); err != nil {
		t.Fatal(err)
	}
	check("ep_a disabled", "y.1", "ep_b")
	a.Enabled = true
	if err := s.UpdateEndpoint(c, a); err != nil {
		t.Fatal(err)
	}
	check("ep_a enabled", "y.1", "ep_a", "ep_b")
	var j *store.Job
	for _, job := range claim(t, s, "a", t0, 100) {
		if job.Endpoint.ID == "ep_a" {
			j = job
		}
	}
	if err := s.Complete(c, &store.Completion{Owner: "a", LeaseUntil: j.LeaseUntil, Status: store.StatusFailed, Disable: "410 Gone",
		Attempt: store.Attempt{ID: "atmpt_gone", DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: "ep_a", Started: t0, StatusCode: 410}}); err != nil {
		t.Fatal(err)
	}
	check("ep_a disabled by its attempt", "y.1", "ep_b")
	if err := s.DeleteEndpoint(c, "ep_b"); err != nil {
		t.Fatal(err)
	}
	check("ep_b deleted", "y.1")
	endpoint(t, s, "ep_c", "y.1")
	check("ep_c created", "y.1", "ep_c")
	ev := &store.Event{ID: "msg_twice", Type: "t", Payload: []byte("{}"), Created: t0}
	if _, err := s.InsertEvent(c, ev, "ep_c", "ep_c", "ep_none"); err != nil {
		t.Fatalf("an event to one endpoint listed twice and a missing one: %v", err)
	}
	if ds, err := s.ListDeliveries(c, ev.ID); err != nil || len(ds) != 1 || ds[0].EndpointID != "ep_c" {
		t.Errorf("an event to one endpoint listed twice: %+v %v, want one delivery to ep_c", ds, err)
	}
}

// testDeleteEndpointInserting: an endpoint deleted while events are
// stored for it, by its filter or listed: neither the deletion nor an
// insert fails, and no delivery to it is left.
func testDeleteEndpointInserting(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_keep")
	const rounds, inserters = 20, 6
	for r := range rounds {
		id := fmt.Sprint("ep_del", r)
		endpoint(t, s, id)
		var evs []string
		var racers []func()
		for i := range inserters {
			ev := &store.Event{ID: fmt.Sprintf("msg_%d_%d", r, i), Type: "t", Payload: []byte("{}"), Created: t0.Add(time.Duration(r) * time.Second)}
			evs = append(evs, ev.ID)
			var targets []string
			if i%2 == 1 {
				targets = []string{id, "ep_keep"}
			}
			racers = append(racers, func() {
				if _, err := s.InsertEvent(c, ev, targets...); err != nil {
					t.Errorf("round %d: an event stored while its endpoint is deleted: %v", r, err)
				}
			})
		}
		together(append(racers, func() {
			if err := s.DeleteEndpoint(c, id); err != nil {
				t.Errorf("round %d: deleting an endpoint while events are stored for it: %v", r, err)
			}
		})...)
		for _, ev := range evs {
			ds, err := s.ListDeliveries(c, ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].EndpointID != "ep_keep" {
				t.Fatalf("round %d, %s: deliveries %+v, want ep_keep's alone", r, ev, ds)
			}
		}
	}
}
