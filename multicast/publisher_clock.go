package multicast

import "time"

// clockResync bounds how long pubClock derives the wall clock from the
// monotonic one before it reads the wall clock again.
const clockResync = time.Millisecond

// pubClock is time.Now for Publish at one clock read instead of two.
//
// time.Now reads the wall clock and the monotonic clock (on linux two
// vDSO calls, 35–50 ns each on the benchmark machine), and Publish reads
// the time once per message. pubClock reads only the monotonic clock
// (time.Since of a time.Now reading) and adds the elapsed time to that
// reading, so its monotonic part is exact and its wall part (a message's
// default Time) follows the wall clock within what the wall clock is
// slewed in clockResync (under 1 µs at NTP's 500 ppm) or stepped since
// the last resync: every clockResync, and whenever the monotonic clock
// seems to run backwards, it takes a fresh time.Now.
//
// Used only when Config.Now is left to its default; an injected clock
// is called as it is. Not safe for concurrent use: Publish calls it
// with Publisher.mu held.
type pubClock struct {
	base time.Time // a time.Now reading; zero before the first call
}

func (c *pubClock) now() time.Time {
	// The zero base has no monotonic reading: Since is then huge, and
	// the first call resyncs.
	if d := time.Since(c.base); d >= 0 && d < clockResync {
		return c.base.Add(d)
	}
	c.base = time.Now()
	return c.base
}
