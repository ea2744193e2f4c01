// Package latency records durations in a fixed-size histogram with
// bounded relative error, for benchmarks and the CLI's demo table.
//
// A [Histogram] uses HDR-style log-linear buckets: values below 256ns
// are counted exactly, and above that every power-of-two range is split
// into 128 equal sub-buckets, so a bucket is never wider than 1/128 of
// its lower bound. Quantiles are reported as the midpoint of their
// bucket, which is within 1/256 (0.4%) of the true value. Values from
// 0 to [Highest] (about 73 minutes) are tracked; larger ones are
// clamped to Highest and counted by [Histogram.Clamped].
//
// Recording never allocates: the histogram is one fixed-size array
// (36 KiB) allocated by [New].
//
//	h := latency.New()
//	for range n {
//		start := time.Now()
//		call()
//		h.Record(time.Since(start))
//	}
//	fmt.Println(h) // n=… p50=… p99=… p99.9=… max=…
//
// A Histogram is not safe for concurrent use. Give each goroutine its
// own and combine them with [Histogram.Merge].
package latency
