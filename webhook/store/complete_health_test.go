package store

import (
	"context"
	"testing"
	"time"
)

// TestCompletionsHealthOrder: two dispatchers' completions, each of an
// attempt to each of two failing endpoints that now answer, one listing
// them in one order and one in the other, both succeed: neither is
// killed as a deadlock (40P01). Each writes the endpoints' health (their
// rows); a third transaction holds both rows until both wait for their
// first. (Which one then gets the other's second row first is up to the
// server: written in the orders given, 1 round in 3 or so ended
// without a deadlock, so the test plays 4.)
func TestCompletionsHealthOrder(t *testing.T) {
	for range 4 {
		completionsHealthOrder(t)
	}
}

func completionsHealthOrder(t *testing.T) {
	ctx := context.Background()
	s, t0 := pgStore(t, "ep_e", nil, "fsync=off", "deadlock_timeout=100ms")
	if err := s.CreateEndpoint(ctx, &Endpoint{ID: "ep_f", URL: "http://127.0.0.1:1/", Enabled: true, Secrets: []Secret{{Secret: "whsec_f"}}, Created: t0, Updated: t0}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"msg_1", "msg_2"} {
		if _, err := s.InsertEvent(ctx, &Event{ID: ev, Type: "t", Payload: []byte(`{}`), Created: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE endpoints SET failing_since = $1`, nanos(t0)); err != nil {
		t.Fatal(err)
	}
	held := map[string]map[string]*Job{}
	for _, owner := range []string{"a", "b"} {
		jobs, err := s.Claim(ctx, ClaimRequest{Owner: owner, Now: t0, Lease: time.Minute, Limit: 2, PerEndpoint: 1})
		if err != nil || len(jobs) != 2 {
			t.Fatal(jobs, err)
		}
		held[owner] = map[string]*Job{}
		for _, j := range jobs {
			held[owner][j.Endpoint.ID] = j
		}
	}
	complete := func(owner string, endpoints ...string) <-chan error {
		var cs []*Completion
		for _, ep := range endpoints {
			j := held[owner][ep]
			cs = append(cs, &Completion{Owner: owner, LeaseUntil: j.LeaseUntil, Status: StatusSucceeded, EndpointOK: true,
				Attempt: Attempt{ID: "atmpt_" + j.Delivery.ID, DeliveryID: j.Delivery.ID, EventID: j.Event.ID, EndpointID: ep, Started: t0, StatusCode: 200}})
		}
		done := make(chan error, 1)
		go func() { done <- s.Complete(ctx, cs...) }()
		return done
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT id FROM endpoints ORDER BY id FOR NO KEY UPDATE`); err != nil {
		t.Fatal(err)
	}
	a := complete("a", "ep_e", "ep_f")
	waitLockWaiters(t, s, 1, a)
	b := complete("b", "ep_f", "ep_e")
	waitLockWaiters(t, s, 2, b)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for owner, done := range map[string]<-chan error{"a": a, "b": b} {
		if err := <-done; err != nil {
			t.Fatalf("%s's completions, the endpoints' health written by the other's at once: %v", owner, err)
		}
	}
}
