package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// testRateSlots: TakeRateSlots gives an endpoint limited to rate a
// second rate slots at once and then one every 1/rate s, says when the
// next frees, saves up no more than a second's worth, waits a slot (not
// the step) after the clock steps back, never gives more than the rate
// to takers at once, and gives again the slots given back
// (ReturnRateSlots), never more.
func testRateSlots(t *testing.T, s store.Store) {
	c := ctx(t)
	endpoint(t, s, "ep_1")
	take := func(id string, rate, n int, at time.Duration, wantTook int, wantNext time.Duration) {
		t.Helper()
		took, next, err := s.TakeRateSlots(c, id, rate, n, t0.Add(at))
		want := time.Time{}
		if wantTook < n {
			want = t0.Add(wantNext)
		}
		if err != nil || took != wantTook || !next.Equal(want) {
			t.Fatalf("%s at %v: %d of %d slots at %d/s, the next at %v (%v); want %d, the next at %v", id, at, took, n, rate, since(next), err, wantTook, since(want))
		}
	}
	const ms = time.Millisecond
	take("ep_1", 4, 10, 0, 4, 250*ms)                             // the burst: one second's worth
	take("ep_1", 4, 1, 100*ms, 0, 250*ms)                         // none before the next frees
	take("ep_1", 4, 2, 250*ms, 1, 500*ms)                         // one every 1/rate s
	take("ep_1", 4, 1, 400*ms, 0, 500*ms)                         //
	take("ep_1", 4, 5, 3*time.Second, 4, 3*time.Second+250*ms)    // idle: a second's worth saved, no more
	take("ep_1", 2, 1, 3*time.Second, 0, 3*time.Second+500*ms)    // a new rate starts from the state the old left
	take("ep_1", 4, 1, time.Second, 0, time.Second+250*ms)        // the clock stepped back 2 s: a slot's wait, not 2 s
	take("ep_1", 4, 2, time.Second+250*ms, 1, time.Second+500*ms) // and then a slot, one every 1/rate s
	take("ep_1", 4, 1, time.Second+500*ms, 1, 0)                  //
	// 1/3 s is rounded up: three at once, then one a third of a second
	// after (rounded up: 333 333 334 ns).
	endpoint(t, s, "ep_3")
	take("ep_3", 3, 10, 0, 3, 333_333_334)
	// Two dispatchers on the store whose clocks differ by under a second
	// (SQLite: each measures by its own; PostgreSQL: transactions that
	// began in one order and lock the row in the other): the one behind
	// finds the limit beyond its tolerance and waits, as the clock stepped
	// back does, but writes nothing: the one ahead, having used its burst,
	// gets no more than the rate by its clock.
	endpoint(t, s, "ep_5")
	take("ep_5", 4, 4, 500*ms, 4, 0)      // ahead by half a second: the burst
	take("ep_5", 4, 1, 0, 0, 250*ms)      // behind: none, a slot's wait
	take("ep_5", 4, 4, 500*ms, 0, 750*ms) // ahead again: the burst used still
	take("ep_5", 4, 1, 750*ms, 1, 0)      // and then one every 1/rate s
	if _, _, err := s.TakeRateSlots(c, "ep_none", 1, 1, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("slots of a missing endpoint: %v, want ErrNotFound", err)
	}

	// Slots given back (ReturnRateSlots) are taken again, and no more:
	// the clock is not moved back past now.
	endpoint(t, s, "ep_4")
	give := func(n int, at time.Duration) {
		t.Helper()
		if err := s.ReturnRateSlots(c, "ep_4", 4, n, t0.Add(at)); err != nil {
			t.Fatalf("giving back %d slots at %v: %v", n, at, err)
		}
	}
	take("ep_4", 4, 4, 0, 4, 0)
	give(2, 0)
	take("ep_4", 4, 3, 0, 2, 250*ms)
	give(8, 100*ms)
	take("ep_4", 4, 5, 100*ms, 4, 350*ms)
	if err := s.ReturnRateSlots(c, "ep_none", 4, 1, t0); err != nil {
		t.Fatalf("giving back slots of a missing endpoint: %v, want none", err)
	}

	// Takers at once, two rounds a second apart: rate slots in each.
	endpoint(t, s, "ep_2")
	const rate, takers = 5, 10
	for round := range 2 {
		now := t0.Add(time.Duration(round) * time.Second)
		var (
			mu    sync.Mutex
			total int
			fns   []func()
		)
		for range takers {
			fns = append(fns, func() {
				for range 3 {
					took, _, err := s.TakeRateSlots(c, "ep_2", rate, 1, now)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					total += took
					mu.Unlock()
				}
			})
		}
		together(fns...)
		if total != rate {
			t.Fatalf("round %d: %d takers at once took %d slots of an endpoint limited to %d/s; want %d", round, takers, total, rate, rate)
		}
	}
}

// since is t after t0, or "none" for the zero time.
func since(t time.Time) any {
	if t.IsZero() {
		return "none"
	}
	return t.Sub(t0)
}
