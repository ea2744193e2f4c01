package latency

import (
	"math/bits"
	"time"
)

// Bucket layout: values below exact are their own bucket; from there
// every power-of-two range [2^e, 2^(e+1)) is split into half equal
// sub-buckets of width 2^(e-subBits).
const (
	subBits = 7            // each bucket is at most 1/2^subBits of its lower bound
	half    = 1 << subBits // sub-buckets per power of two
	exact   = 2 * half     // values below this are counted exactly
	topBits = 42           // values below 2^topBits are tracked
	buckets = exact + (topBits-subBits-1)*half
)

// Highest is the largest duration a [Histogram] tracks, 2^42-1 ns (about
// 73 minutes). Larger values are recorded as Highest.
const Highest = time.Duration(1<<topBits - 1)

// bucketOf returns the bucket index of v, which must be at most Highest.
func bucketOf(v uint64) int {
	if v < exact {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - subBits
	return exact + (shift-1)*half + int(v>>shift) - half
}

// bucketRange returns the lowest value of bucket i and the bucket's
// width.
func bucketRange(i int) (lower, width uint64) {
	if i < exact {
		return uint64(i), 1
	}
	k := i - exact
	shift := k/half + 1
	return uint64(k%half+half) << shift, 1 << shift
}

// bucketMid is the value reported for a quantile that falls in bucket i:
// the midpoint of its range, within width/2 <= lower/256 of every value
// in it.
func bucketMid(i int) uint64 {
	lower, width := bucketRange(i)
	return lower + width/2
}
