package multicast

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// wallSlack is how far pubClock's wall reading may stray from the wall
// clock's while the wall clock is slewed: 500 ppm of clockResync.
const wallSlack = time.Microsecond

// within reports whether t lies in [lo, hi] by its monotonic reading
// (Before/After), and by its wall reading (UnixNano) within wallSlack.
func within(t, lo, hi time.Time) bool {
	w := t.UnixNano()
	return !t.Before(lo) && !t.After(hi) && w >= lo.UnixNano()-int64(wallSlack) && w <= hi.UnixNano()+int64(wallSlack)
}

func TestPubClock(t *testing.T) {
	var c pubClock
	before := time.Now()
	first := c.now()
	if c.base.IsZero() || !within(first, before, time.Now()) {
		t.Fatalf("first reading %v, base %v: not a time.Now reading", first, c.base)
	}
	// Within clockResync: derived from the base, one clock read, and
	// still the current time, wall and monotonic.
	base, prev := c.base, first
	for range 1000 {
		lo := time.Now()
		if lo.Sub(base) >= clockResync/2 {
			break // a slow machine: the base is due for a resync
		}
		got := c.now()
		hi := time.Now()
		if !within(got, lo, hi) || got.Before(prev) {
			t.Fatalf("reading %v (wall %d) not in [%v, %v] (wall [%d, %d]) or before the previous %v", got, got.UnixNano(), lo, hi, lo.UnixNano(), hi.UnixNano(), prev)
		}
		if c.base != base && hi.Sub(base) < clockResync {
			t.Fatalf("resynced %v after %v, before clockResync %v", c.base, lo.Sub(base), clockResync)
		}
		prev = got
	}
	// A base clockResync old, or one ahead of the monotonic clock, is
	// replaced by a fresh time.Now reading.
	for _, stale := range []time.Duration{-2 * clockResync, time.Hour} {
		c.base = time.Now().Add(stale)
		lo := time.Now()
		got := c.now()
		if !within(got, lo, time.Now()) || c.base != got {
			t.Errorf("base moved by %v: reading %v, base %v, want a fresh time.Now", stale, got, c.base)
		}
	}
}

// TestPublishDefaultTime: with Config.Now left to its default, a message
// published with a zero Time arrives stamped with the wall-clock time of
// its Publish call (within wallSlack).
func TestPublishDefaultTime(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	if !p.fastNow {
		t.Fatal("Config.Now left nil: Publish does not use pubClock")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 200
	lo := make([]time.Time, n)
	hi := make([]time.Time, n)
	for i := range n {
		lo[i] = time.Now()
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 16)}); err != nil {
			t.Fatal(err)
		}
		hi[i] = time.Now()
	}
	for got := 0; got < n; {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != transport.EventMessage {
			continue
		}
		i := indexOf(ev.Message.Payload)
		if tm := ev.Message.Time.UnixNano(); tm < lo[i].UnixNano()-int64(wallSlack) || tm > hi[i].UnixNano()+int64(wallSlack) {
			t.Fatalf("message %d stamped %d, published in wall [%d, %d]", i, tm, lo[i].UnixNano(), hi[i].UnixNano())
		}
		got++
	}
}
