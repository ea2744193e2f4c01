package reliable

import (
	"math"
	"time"
)

// nackDelay draws the wait before a receiver's first NACK for a loss,
// from the truncated exponential distribution of RFC 5401 section 2.4
// (also used by Aeron for multicast NAKs): most receivers of a large
// group wait close to tmax, a few answer early, so the first NACK's NCF
// usually suppresses the rest. u is uniform in [0, 1).
func nackDelay(u float64, tmax time.Duration, groupSize int) time.Duration {
	if tmax <= 0 {
		return 0
	}
	t := float64(tmax)
	lambda := math.Log(float64(groupSize)) + 1
	e := math.Exp(lambda) - 1
	x := u*lambda/t + lambda/(t*e)
	d := t / lambda * math.Log(x*e*t/lambda)
	return time.Duration(min(max(d, 0), t))
}

// uniform turns a Rand draw into a float in [0, 1).
func uniform(r Rand) float64 { return float64(r.Uint64()>>11) / (1 << 53) }
