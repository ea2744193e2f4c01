package main

import (
	"math"
	"time"
)

// pacer is an open-loop schedule: message n (counting from 0) is due at
// start + n/rate. A sender that falls behind catches up from the
// schedule rather than from its last send, so a slow moment does not
// lower the average rate.
type pacer struct {
	start time.Time
	rate  float64 // messages per second, > 0
	limit uint64  // messages in all; 0: no limit
}

// due is how many messages should have been sent by now.
func (p pacer) due(now time.Time) uint64 {
	elapsed := now.Sub(p.start)
	if elapsed < 0 {
		return 0
	}
	n := uint64(math.Floor(elapsed.Seconds()*p.rate)) + 1
	if p.limit > 0 {
		n = min(n, p.limit)
	}
	return n
}

// at is when message n is due.
func (p pacer) at(n uint64) time.Time {
	return p.start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
}

// done reports whether all sent messages complete the schedule.
func (p pacer) done(sent uint64) bool { return p.limit > 0 && sent >= p.limit }

// limitFor is the number of messages a schedule at rate holds in the
// first d: those due before d. It is 0 (no limit) when d is not
// positive.
func limitFor(rate float64, d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	// The epsilon keeps a float product such as 20000.000000001 from
	// adding a message.
	return uint64(math.Ceil(rate*d.Seconds() - 1e-9))
}
