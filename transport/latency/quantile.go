package latency

import (
	"math"
	"time"
)

// Quantile returns the duration below or at which a fraction q of the
// recorded durations fall: the value of rank ceil(q·Count) in sorted
// order. It is reported as the midpoint of that value's bucket, limited
// to [Min, Max], so it is within 1/256 of the true quantile (exact below
// 256ns). Quantile(0) is exactly Min and Quantile(1) exactly Max. q is
// clamped to [0, 1]; NaN counts as 0. An empty histogram returns 0.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.count == 0 || !(q > 0) {
		return h.Min()
	}
	if q >= 1 {
		return h.Max()
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	rank = min(max(rank, 1), h.count)
	var seen uint64
	last := bucketOf(h.max)
	for i := bucketOf(h.min); i <= last; i++ {
		seen += h.counts[i]
		if seen >= rank {
			return time.Duration(min(max(bucketMid(i), h.min), h.max))
		}
	}
	return h.Max()
}
