package statsd

import "time"

// Snapshot is one flush: every value a backend writes. Backends share
// it and must not change it.
type Snapshot struct {
	// Time is when the flush happened; Timestamp is Etsy's flush
	// timestamp, the Unix time rounded to the second.
	Time      time.Time
	Timestamp int64
	// Interval is the flush interval the rates are computed over.
	Interval time.Duration

	Counters []CounterValue
	Gauges   []GaugeValue
	Timers   []TimerValue
	Sets     []SetValue

	// Server describes the server itself over the interval.
	Server ServerStats
}

// CounterValue is a counter's flush: Count is the sum of value × 1/rate
// since the last flush (Etsy's stats_counts.<key>), Rate that per
// second (stats.<key>).
type CounterValue struct {
	Key         string
	Count, Rate float64
	// Increase is the sum of the values not below zero, each times
	// 1/rate: what the Prometheus output adds to its counter, which
	// never decreases (and stays finite: an Increase that is not, or
	// that would make the counter overflow, is left out there). Count
	// also has the values below zero, as Etsy adds them.
	Increase float64
	// Decrease is the sum of the values below zero, each times 1/rate:
	// what the Prometheus output adds to its counter, scaled, through a
	// mapping whose scale is below zero (statsd_exporter scales each
	// value before it refuses the negative ones).
	Decrease float64
	// Own marks Etsy's counters of the server itself:
	// <prefixStats>.packets_received, metrics_received, bad_lines_seen.
	Own bool
}

// GaugeValue is a gauge's current value.
type GaugeValue struct {
	Key   string
	Value float64
	// Own marks Etsy's gauge of the server itself,
	// <prefixStats>.timestamp_lag.
	Own bool
}

// TimerValue is a timer's statistics, named as Etsy names them: count,
// count_ps, mean, upper, lower, sum, sum_squares, median, std, the
// per-threshold ones (count_90, ...), and histogram bins as
// "histogram.bin_<limit>". An idle timer has only count and count_ps.
type TimerValue struct {
	Key   string
	Stats []Stat
	// Type is the type of the key's first value: Timer (ms),
	// Histogram (h) or Distribution (d).
	Type Type
	// Count is the number of values received over the interval, each
	// scaled by 1/sample rate (Etsy's count, also when
	// CalculatedTimerMetrics leaves it out of Stats).
	Count float64
	// Values are the interval's values, sorted, unscaled. They are
	// valid until the next flush, which reuses their memory.
	Values []float64
	// Weights are the 1/sample rate of each value, in step with
	// Values, when the interval's values came with different rates;
	// nil when they all had the same, each then weighing
	// Count/len(Values).
	Weights []float64
}

// Stat is a named number.
type Stat struct {
	Name  string
	Value float64
}

// SetValue is the number of unique members a set received since the
// last flush.
type SetValue struct {
	Key   string
	Count int
}

// ServerStats is what the server reports about itself at each flush, on
// top of Etsy's own counters (packets_received, metrics_received,
// bad_lines_seen, which are ordinary counters in the Snapshot).
type ServerStats struct {
	// ProcessingTime is how long the aggregator took to compute this
	// flush (Etsy's processing_time).
	ProcessingTime time.Duration
	// LastFlushDuration is how long the previous flush took end to end,
	// backends included.
	LastFlushDuration time.Duration
	// Keys held, by type.
	Keys KeyCounts
	// KeysEvicted are the idle keys this flush forgot to make room at
	// the key cap (AggregatorConfig.EvictIdleFlushes).
	KeysEvicted uint64
	// Dropped by the aggregator's limits over the interval.
	Dropped Drops
	// SeqLines counts the sequence lines received over the interval.
	SeqLines uint64
	// EventsIgnored and ServiceChecksIgnored count the well-formed
	// DogStatsD events and service checks received over the interval:
	// not metrics, and no backend takes them (IsEvent, IsServiceCheck).
	// They are in metrics_received, which counts every line as Etsy's
	// does, not in bad_lines_seen; a malformed one is a bad line.
	EventsIgnored, ServiceChecksIgnored uint64
	// NegativeCounterValues counts the counter values below zero
	// received over the interval (in CounterValue.Count, not in
	// Increase).
	NegativeCounterValues uint64
	// Clients is the loss accounting of the clients that number their
	// packets.
	Clients []ClientLoss
	// Listener counters over the interval, filled in by the Server.
	Listen ListenStats
	// Backends counts each backend's failures over the interval.
	BackendErrors map[string]uint64
	// BackendLinesLost counts, per backend, the JSON lines lost over the
	// interval (never written, never to be): Log's lines the log did
	// not take or failed, also those of a flush that had already given
	// up waiting for them; Console's lines of the flushes it dropped,
	// its writer blocked, or failed to write. Only backends that lose
	// lines have an entry.
	BackendLinesLost map[string]uint64
}

// ListenStats counts what happened on the sockets over an interval.
type ListenStats struct {
	// KernelDrops are datagrams the kernel dropped on our UDP sockets
	// because their receive buffers were full (the drops column of
	// /proc/net/udp; Close's final flush has those read as it began
	// closing the sockets).
	KernelDrops uint64
	// Truncated are datagrams longer than the read buffer.
	Truncated uint64
	// LinesTooLong are TCP lines longer than MaxLineLength, discarded.
	LinesTooLong uint64
	// ReadErrors are failed reads, and failed TCP accepts. Each is
	// retried after a pause, 5 ms after a read that worked and twice
	// the last one while they go on failing, at most 1 s; one in every
	// BadLineLogGap at most is logged.
	ReadErrors uint64
	// EvictedConns are TCP connections closed to admit a new one while
	// MaxConns were open: each the one idle the longest. IdleConns are
	// TCP connections closed after IdleTimeout without a byte.
	EvictedConns, IdleConns uint64
	// Repeated and RepeatDropped are packets the repeaters forwarded and
	// dropped (queue full or send failed).
	Repeated, RepeatDropped uint64
}
