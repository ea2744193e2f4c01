package latency

import (
	"fmt"
	"time"
)

// String summarises h as "n=… p50=… p99=… p99.9=… max=…", durations
// rounded to three significant digits.
func (h *Histogram) String() string {
	return fmt.Sprintf("n=%d p50=%v p99=%v p99.9=%v max=%v",
		h.count, round3(h.Quantile(0.5)), round3(h.Quantile(0.99)),
		round3(h.Quantile(0.999)), round3(h.Max()))
}

// round3 rounds d to three significant digits, so 1.234567ms prints as
// 1.23ms.
func round3(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		unit *= 10
	}
	return d.Round(unit)
}
