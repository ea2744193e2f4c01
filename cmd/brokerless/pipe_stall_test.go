package main

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/pipe"
)

// TestPipeStallWatch: writes in flight and no receipt for stallAfter is
// a stall, said once; a receipt ends it; nothing in flight is none.
func TestPipeStallWatch(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	var w stallWatch
	steps := []struct {
		at         time.Duration
		s          pipe.Stats
		warn, over bool
	}{
		{0, pipe.Stats{Accepted: 5, InFlight: 3}, false, false},
		{stallAfter - time.Second, pipe.Stats{Accepted: 5, InFlight: 3}, false, false},
		{stallAfter, pipe.Stats{Accepted: 5, InFlight: 3}, true, false},
		{stallAfter + time.Second, pipe.Stats{Accepted: 5, InFlight: 3}, false, false},
		{stallAfter + 2*time.Second, pipe.Stats{Accepted: 6, InFlight: 2}, false, true},
		{stallAfter + 3*time.Second, pipe.Stats{Accepted: 6, InFlight: 2}, false, false},
		// Idle: nothing in flight is no stall, however long.
		{5 * stallAfter, pipe.Stats{Accepted: 6}, false, false},
		{6 * stallAfter, pipe.Stats{Accepted: 6}, false, false},
		// Writes come after a long idle: the wait counts from the
		// last check that found none in flight.
		{6*stallAfter + time.Second, pipe.Stats{Accepted: 6, InFlight: 1}, false, false},
		{7*stallAfter - time.Second, pipe.Stats{Accepted: 6, InFlight: 1}, false, false},
		{7 * stallAfter, pipe.Stats{Accepted: 6, InFlight: 1}, true, false},
	}
	for i, s := range steps {
		warn, over := w.check(t0.Add(s.at), s.s)
		if warn != s.warn || over != s.over {
			t.Errorf("step %d at %v: warn %v over %v, want %v %v", i, s.at, warn, over, s.warn, s.over)
		}
	}
}
