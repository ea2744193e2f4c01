package dispatch

import (
	"context"
	"testing"
	"time"
)

// TestRateReturnBothWaysKeepsRate: of a take of 2 slots of an endpoint
// limited to 4/s, a worker gives its slot back (its delivery released
// as it starts), then, another dispatcher having taken slots meanwhile,
// the claim gives back the other's slot (its delivery refused by
// admit), one slot later: each counted its own slots still ahead of the
// clock as if none of the take had been given back, and between them
// gave back one past, moving the other dispatcher's slots back.
func TestRateReturnBothWaysKeepsRate(t *testing.T) {
	ctx := context.Background()
	s, c := sqliteStore(t), &clock{t: t0}
	addEndpoint(t, s, "ep_1", "http://127.0.0.1:1/", t0)
	rateLimited(t, s, "ep_1", 4)
	d := newDispatcher(t, s, c)
	took, _, err := s.TakeRateSlots(ctx, "ep_1", 4, 2, t0)
	if err != nil || took != 2 {
		t.Fatal(took, err)
	}
	taken := &slotsTaken{rate: 4, n: 1, took: 2, at: t0}
	c.Set(t0.Add(100 * time.Millisecond))
	d.returnSlot(ctx, "ep_1", taken)
	c.Set(t0.Add(200 * time.Millisecond))
	other, _, err := s.TakeRateSlots(ctx, "ep_1", 4, 4, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	c.Set(t0.Add(300 * time.Millisecond))
	d.returnSlots(ctx, map[string]*slotsTaken{"ep_1": taken})
	more, _, err := s.TakeRateSlots(ctx, "ep_1", 4, 4, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	if other+more > 4 {
		t.Fatalf("another dispatcher took %d slots of an endpoint limited to 4/s, then %d more 100 ms later; want 4 in all", other, more)
	}
}
