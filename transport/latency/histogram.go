package latency

import (
	"math/bits"
	"time"
)

// Histogram records durations with a relative error of at most 1/256.
// The zero value is not usable; call [New]. A Histogram is not safe for
// concurrent use.
type Histogram struct {
	counts   [buckets]uint64
	count    uint64
	clamped  uint64
	min, max uint64 // in nanoseconds; meaningful when count > 0
	sumHi    uint64 // 128-bit sum of recorded nanoseconds, so Mean is exact
	sumLo    uint64
}

// New returns an empty histogram. It is the only allocation a Histogram
// makes.
func New() *Histogram { return new(Histogram) }

// Record adds one duration. Negative durations are recorded as 0 and
// durations above [Highest] as Highest (and counted by Clamped). It
// never allocates.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	if v > uint64(Highest) {
		v = uint64(Highest)
		h.clamped++
	}
	h.counts[bucketOf(v)]++
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.count++
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, v, 0)
	h.sumHi += carry
}

// Count is the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.count }

// Clamped is the number of recorded durations that exceeded [Highest]
// and were recorded as Highest.
func (h *Histogram) Clamped() uint64 { return h.clamped }

// Min is the smallest recorded duration, exactly; 0 when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max is the largest recorded duration, exactly (after clamping to
// [Highest]); 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean is the exact mean of the recorded durations, rounded down to a
// nanosecond; 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	// The mean is at most Highest, so the quotient fits and sumHi < count.
	q, _ := bits.Div64(h.sumHi, h.sumLo, h.count)
	return time.Duration(q)
}

// Merge adds every duration recorded in o to h. A nil o adds nothing.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.count == 0 {
		return
	}
	for i, n := range o.counts {
		h.counts[i] += n
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.count == 0 || o.max > h.max {
		h.max = o.max
	}
	h.count += o.count
	h.clamped += o.clamped
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, o.sumLo, 0)
	h.sumHi += o.sumHi + carry
}

// Reset empties h for reuse.
func (h *Histogram) Reset() { *h = Histogram{} }
