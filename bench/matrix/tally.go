package matrix

import (
	"context"
	"fmt"
	"time"
)

// searchTally is search for a Tally: each probe sends n messages at a
// rate and waits until the server has counted them all, or its count
// stopped moving for quiet (longer than its flush interval).
func (r *runner) searchTally(ctx context.Context, t Tally, cell Cell, probeTime time.Duration) (float64, error) {
	if err := readyTally(ctx, t, cell.Size, r.set.ReadyTimeout); err != nil {
		return 0, err
	}
	// c0 is the count before a probe: exact after a probe that passed;
	// after one that failed, whatever the server still had to count is
	// waited for first.
	c0, err := settle(ctx, t, tallyQuiet)
	if err != nil {
		return 0, err
	}
	probe := func(rate float64) (bool, error) {
		n := int(rate * probeTime.Seconds())
		n = min(n, r.set.MaxProbeMessages, max(r.set.MaxProbeBytes/cell.Size, 1))
		n = max(n, 20)
		buf := make([]byte, cell.Size)
		start := now()
		for i := range n {
			due := start + int64(float64(i)*1e9/rate)
			if now() < due {
				waitUntil(due)
			}
			if err := t.Send(buf); err != nil {
				return false, err
			}
		}
		took := now() - start
		c1, err := waitCount(ctx, t, c0+uint64(n), tallyQuiet)
		if err != nil {
			return false, err
		}
		keptUp := float64(took) <= float64(n-1)/rate*1e9*1.1+float64(2*time.Millisecond)
		ok := c1 == c0+uint64(n) && keptUp
		if c0 = c1; !ok {
			if c0, err = settle(ctx, t, tallyQuiet); err != nil {
				return false, err
			}
		}
		return ok, nil
	}
	return r.searchWith(ctx, probe)
}

// tallyQuiet is how long a count must stay still to be final: two and
// a half of the StatsD servers' 100 ms flushes.
const tallyQuiet = 250 * time.Millisecond

// readyTally sends a message every 200 ms until the server counted one.
func readyTally(ctx context.Context, t Tally, size int, timeout time.Duration) error {
	c0, err := t.Counted()
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := t.Send(buf); err != nil {
			return err
		}
		end := now() + int64(200*time.Millisecond)
		for now() < end {
			c, err := t.Counted()
			if err != nil {
				return err
			}
			if c > c0 {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			waitUntil(now() + int64(10*time.Millisecond))
		}
	}
	return fmt.Errorf("nothing counted after %v", timeout)
}

// settle waits until the count has not moved for quiet and returns it.
func settle(ctx context.Context, t Tally, quiet time.Duration) (uint64, error) {
	return waitCount(ctx, t, ^uint64(0), quiet)
}

// waitCount polls the count until it reaches want or stays still for
// quiet, and returns it.
func waitCount(ctx context.Context, t Tally, want uint64, quiet time.Duration) (uint64, error) {
	last, err := t.Counted()
	if err != nil {
		return 0, err
	}
	moved := time.Now()
	for last < want && time.Since(moved) < quiet {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		waitUntil(now() + int64(10*time.Millisecond))
		c, err := t.Counted()
		if err != nil {
			return 0, err
		}
		if c != last {
			last, moved = c, time.Now()
		}
	}
	return last, nil
}
