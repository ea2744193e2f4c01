package dispatch

import "time"

// bucket is a token bucket of an endpoint's rate limit: rate tokens a
// second, at most rate (one second's worth) saved up.
type bucket struct {
	rate   int
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since the last call.
func (b *bucket) refill(now time.Time) {
	if b.last.IsZero() {
		b.tokens, b.last = float64(b.rate), now
		return
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(float64(b.rate), b.tokens+el.Seconds()*float64(b.rate))
		b.last = now
	}
}

// take takes one token if there is one.
func (b *bucket) take(now time.Time) bool {
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// ready reports whether a token is available at now, and if not when one will be.
func (b *bucket) ready(now time.Time) (bool, time.Time) {
	b.refill(now)
	if b.tokens >= 1 {
		return true, now
	}
	return false, now.Add(time.Duration((1 - b.tokens) / float64(b.rate) * float64(time.Second)))
}

// full reports whether the bucket holds its most tokens at now: one made
// anew would be the same.
func (b *bucket) full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= float64(b.rate)
}
