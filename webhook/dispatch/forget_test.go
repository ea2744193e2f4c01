package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestIdleRateLimitedForgotten: the dispatcher forgets the state it kept
// for a rate-limited endpoint once it is idle and no longer waits for a
// slot (the slots are the store's: nothing is lost), as it forgets the
// others at once: it kept every rate-limited endpoint it ever delivered
// to, deleted ones included, and went through all of them at every poll.
func TestIdleRateLimitedForgotten(t *testing.T) {
	s, c := sqliteStore(t), &clock{t: t0}
	rcv := newReceiver(t, status(200))
	const endpoints = 20
	for i := range endpoints {
		id := fmt.Sprint("ep_", i)
		addEndpoint(t, s, id, rcv.URL, t0)
		e, _ := s.GetEndpoint(context.Background(), id)
		e.RateLimit = 1
		if err := s.UpdateEndpoint(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	// Two events: each endpoint's second waits for a slot.
	addEvent(t, s, "t", t0)
	addEvent(t, s, "t", t0)
	d := newDispatcher(t, s, c)
	deliverDue(t, d, endpoints)
	for i := range endpoints {
		if err := s.DeleteEndpoint(context.Background(), fmt.Sprint("ep_", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Set(t0.Add(2 * time.Second))
	deliverDue(t, d, 0)
	d.mu.Lock()
	kept := len(d.endpoints)
	d.mu.Unlock()
	if kept != 0 {
		t.Fatalf("%d endpoints' state kept, idle 2 s with rate limit 1/s (and deleted); want 0", kept)
	}
}
