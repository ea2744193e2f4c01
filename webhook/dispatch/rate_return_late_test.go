package dispatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// competingTake is a store whose first take of rate-limit slots takes
// long (the test's clock moves on by after), past the slots taken, and
// another dispatcher takes the endpoint's whole second's worth at once
// meanwhile. Then the clock steps back by back (0: none).
type competingTake struct {
	store.Store
	c           *clock
	after, back time.Duration
	once        sync.Once
	other       int // slots the other took
}

func (s *competingTake) TakeRateSlots(ctx context.Context, id string, rate, n int, now time.Time) (int, time.Time, error) {
	took, next, err := s.Store.TakeRateSlots(ctx, id, rate, n, now)
	s.once.Do(func() {
		later := now.Add(s.after)
		s.c.Set(later)
		s.other, _, _ = s.Store.TakeRateSlots(ctx, id, rate, rate, later)
		s.c.Set(later.Add(-s.back))
	})
	return took, next, err
}

// TestRateReturnLateKeepsRate: slots given back once they are past
// (the claim's refused deliveries' slots, given back after another
// dispatcher took the endpoint's whole second's worth, its limit
// having restarted from the clock) are not given back: moved back, the
// other's slots let more than the rate through.
func TestRateReturnLateKeepsRate(t *testing.T) {
	c := &clock{t: t0}
	s := &competingTake{Store: sqliteStore(t), c: c, after: 1100 * time.Millisecond}
	d, _ := boundedRateDispatcher(t, s, c)
	if _, _, _, _, err := d.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.wg.Wait()
	more, _, err := s.Store.TakeRateSlots(context.Background(), "ep_1", 4, 4, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.other != 4 || more != 0 {
		t.Fatalf("the other dispatcher took %d slots of an endpoint limited to 4/s, then %d more at the same time; want 4, then 0", s.other, more)
	}
}

// TestRateReturnSteppedBackKeepsRate: TestRateReturnLateKeepsRate with
// the clock stepped back, before the take, once the other dispatcher
// took its slots. The slots given back are measured against a clock
// earlier than the take's: none counted past, every one was given back
// (and the store, measuring by that clock too, moved the endpoint's
// slots back by them), the other's slots with them, and more than the
// rate went through. A clock earlier than the take's tells nothing of
// how long ago the take was: none is given back.
func TestRateReturnSteppedBackKeepsRate(t *testing.T) {
	c := &clock{t: t0}
	s := &competingTake{Store: sqliteStore(t), c: c, after: 1100 * time.Millisecond, back: 1200 * time.Millisecond}
	d, _ := boundedRateDispatcher(t, s, c)
	if _, _, _, _, err := d.poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.wg.Wait()
	// (At the other's clock: the one stepped back finds the endpoint's
	// slots ahead of it by more than a second, and takes none.)
	more, _, err := s.Store.TakeRateSlots(context.Background(), "ep_1", 4, 4, t0.Add(s.after))
	if err != nil {
		t.Fatal(err)
	}
	if s.other != 4 || more != 0 {
		t.Fatalf("the other dispatcher took %d slots of an endpoint limited to 4/s, then %d more at the same time, after a return by a clock stepped back; want 4, then 0", s.other, more)
	}
}
