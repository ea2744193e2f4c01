package statsd

import (
	"math"
	"time"
)

// Defaults of AggregatorConfig.
const (
	DefaultFlushInterval     = 10 * time.Second
	DefaultPercentThreshold  = 90
	DefaultPrefixStats       = "statsd"
	DefaultMaxKeys           = 500_000
	DefaultMaxTimerSamples   = 5_000_000
	DefaultMaxSetMembers     = 1_000_000
	DefaultMaxClients        = 4096
	DefaultClientIdleFlushes = 30
	DefaultEvictIdleFlushes  = 5
)

// AggregatorConfig says how metrics are aggregated. The names in
// parentheses are Etsy statsd's configuration options, whose meaning the
// fields keep. Zero fields take the documented defaults.
type AggregatorConfig struct {
	// FlushInterval (flushInterval) is the time between two flushes; it
	// turns counts into per-second rates. Default 10 s. Etsy counts it in
	// whole milliseconds, and so does the arithmetic here.
	FlushInterval time.Duration
	// PercentThreshold (percentThreshold) lists the percentiles of the
	// timer statistics: count_N, mean_N, upper_N, sum_N and
	// sum_squares_N; negative values take the top: lower_topN. Default
	// [90].
	PercentThreshold []float64
	// DeleteIdleStats (deleteIdleStats) sets the four below.
	DeleteIdleStats bool
	// DeleteCounters, DeleteTimers, DeleteSets (deleteCounters, ...):
	// a key that received nothing since the last flush is not flushed
	// (instead of flushing 0). DeleteGauges (deleteGauges): a gauge not
	// set for GaugesMaxTTL flushes is forgotten (instead of flushing its
	// last value forever).
	DeleteCounters, DeleteTimers, DeleteSets, DeleteGauges bool
	// GaugesMaxTTL (gaugesMaxTTL): default 1.
	GaugesMaxTTL int
	// PrefixStats (prefixStats) names the server's own metrics:
	// "<prefix>.packets_received" and so on. Default "statsd".
	PrefixStats string
	// CalculatedTimerMetrics (calculatedTimerMetrics) lists the timer
	// statistics to flush, e.g. ["count", "mean", "upper_percent",
	// "histogram"]; "_percent" stands for every threshold. Default: all.
	CalculatedTimerMetrics []string
	// Histogram (histogram): for the timers whose key contains Metric
	// (first match wins), the count of values below each bin's upper
	// limit (+Inf is Etsy's 'inf'). Default none.
	Histogram []HistogramConfig
	// MaxKeys bounds the keys (counters, gauges, timers and sets
	// together); values for new keys beyond it are dropped and counted.
	// Default 500,000.
	MaxKeys int
	// EvictIdleFlushes makes room at the key cap: when a flush finds
	// MaxKeys keys held, it forgets (evicts) every key that received no
	// value for this many flush intervals, and counts them
	// (server.keys_evicted). So a flood of one-off keys cannot lock new
	// keys out until a restart; a key that keeps receiving values is
	// never evicted. An evicted counter, timer or set stops flushing
	// zeros until it receives a value again; an evicted gauge loses its
	// value. Below the cap nothing is evicted (Etsy's behaviour). Default
	// 5; -1 never evicts.
	EvictIdleFlushes int
	// MaxTimerSamples bounds the timer values kept between two flushes
	// (the previous flush's are kept beside them until the next flush,
	// in its Snapshot: TimerValue.Values); MaxSetMembers the set
	// members, each held in at most 32 bytes (a longer member as its
	// SHA-256). A timer value takes 8 bytes, 16 in an interval where
	// its key's values came with several sample rates (each keeps its
	// 1/rate, TimerValue.Weights). Beyond them values are dropped and counted. Defaults
	// 5,000,000 and 1,000,000.
	MaxTimerSamples, MaxSetMembers int
	// MaxClients bounds the clients whose sequence lines are tracked;
	// ClientIdleFlushes forgets a client after that many flushes without
	// a packet. Defaults 4096 and 30.
	MaxClients, ClientIdleFlushes int
}

// HistogramConfig is one entry of AggregatorConfig.Histogram.
type HistogramConfig struct {
	Metric string
	// Bins are increasing upper limits (exclusive); math.Inf(1) catches
	// the rest.
	Bins []float64
}

func (c *AggregatorConfig) setDefaults() {
	setDefault(&c.FlushInterval, DefaultFlushInterval)
	if c.PercentThreshold == nil {
		c.PercentThreshold = []float64{DefaultPercentThreshold}
	}
	if c.DeleteIdleStats {
		c.DeleteCounters, c.DeleteTimers, c.DeleteSets, c.DeleteGauges = true, true, true, true
	}
	setDefault(&c.GaugesMaxTTL, 1)
	if c.PrefixStats == "" {
		c.PrefixStats = DefaultPrefixStats
	}
	setDefault(&c.MaxKeys, DefaultMaxKeys)
	setDefault(&c.EvictIdleFlushes, DefaultEvictIdleFlushes)
	setDefault(&c.MaxTimerSamples, DefaultMaxTimerSamples)
	setDefault(&c.MaxSetMembers, DefaultMaxSetMembers)
	setDefault(&c.MaxClients, DefaultMaxClients)
	setDefault(&c.ClientIdleFlushes, DefaultClientIdleFlushes)
}

func (c *AggregatorConfig) validate() error {
	if c.FlushInterval < time.Millisecond {
		return badConfig("FlushInterval", c.FlushInterval, "must be at least 1ms")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"GaugesMaxTTL", c.GaugesMaxTTL}, {"MaxKeys", c.MaxKeys}, {"MaxTimerSamples", c.MaxTimerSamples},
		{"MaxSetMembers", c.MaxSetMembers}, {"MaxClients", c.MaxClients}, {"ClientIdleFlushes", c.ClientIdleFlushes}} {
		if f.v < 0 {
			return badConfig(f.name, f.v, "must not be negative")
		}
	}
	if c.EvictIdleFlushes < -1 {
		return badConfig("EvictIdleFlushes", c.EvictIdleFlushes, "must be -1 (never) or positive")
	}
	for _, p := range c.PercentThreshold {
		if math.IsNaN(p) || math.IsInf(p, 0) || p < -100 || p > 100 {
			return badConfig("PercentThreshold", p, "must be in [-100, 100]")
		}
	}
	for _, h := range c.Histogram {
		for i, b := range h.Bins {
			if math.IsNaN(b) || i > 0 && !(b > h.Bins[i-1]) {
				return badConfig("Histogram", h.Metric, "bins must increase")
			}
		}
	}
	return nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
