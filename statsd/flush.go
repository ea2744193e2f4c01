package statsd

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Flush computes the flush at now and resets the aggregator for the
// next interval, keeping, zeroing or deleting each key as Etsy does
// (stats.js clear_metrics). At the key cap it first evicts the keys
// idle for EvictIdleFlushes intervals.
func (a *Aggregator) Flush(now time.Time) *Snapshot {
	ts := int64(jsRound(float64(now.UnixMilli()) / 1000))
	interval := float64(a.cfg.FlushInterval.Milliseconds())
	if a.lastTimestamp > 0 {
		g := a.gauges[a.lagKey]
		if g == nil {
			g = &gaugeState{ttl: -1, own: true}
			a.gauges[a.lagKey] = g
		}
		g.value = float64(ts-a.lastTimestamp) - interval/1000
	}
	a.lastTimestamp = ts
	s := &Snapshot{
		Time:      now,
		Timestamp: ts,
		Interval:  a.cfg.FlushInterval,
		Counters:  make([]CounterValue, 0, len(a.counters)),
		Gauges:    make([]GaugeValue, 0, len(a.gauges)),
		Timers:    make([]TimerValue, 0, len(a.timers)),
		Sets:      make([]SetValue, 0, len(a.sets)),
	}
	evict := a.evicting()
	for k, c := range a.counters {
		if evict(c.seen) && !c.own {
			delete(a.counters, k)
			s.Server.KeysEvicted++
			continue
		}
		s.Counters = append(s.Counters, CounterValue{Key: k, Count: c.value, Increase: c.increase, Decrease: c.decrease, Rate: c.value / (interval / 1000), Own: c.own})
	}
	stats := make([]Stat, 0, len(a.timers)*a.timerNames.perTimer(len(a.cfg.Histogram) > 0))
	for k, t := range a.timers {
		if evict(t.seen) {
			delete(a.timers, k)
			s.Server.KeysEvicted++
			continue
		}
		start := len(stats)
		stats = a.timerStats(stats, k, t, interval)
		s.Timers = append(s.Timers, TimerValue{Key: k, Type: t.typ, Count: t.count, Values: t.values,
			Weights: t.weights, Stats: stats[start:len(stats):len(stats)]})
	}
	for k, g := range a.gauges {
		if evict(g.seen) && !g.own {
			delete(a.gauges, k)
			s.Server.KeysEvicted++
			continue
		}
		s.Gauges = append(s.Gauges, GaugeValue{Key: k, Value: g.value, Own: g.own})
	}
	for k, set := range a.sets {
		if evict(set.seen) {
			delete(a.sets, k)
			s.Server.KeysEvicted++
			continue
		}
		s.Sets = append(s.Sets, SetValue{Key: k, Count: len(set.members)})
	}
	a.keys -= int(s.Server.KeysEvicted)
	a.flushes++
	s.Server.Keys = a.Keys()
	s.Server.Dropped = a.dropped
	s.Server.SeqLines, s.Server.Clients = a.seq.flush()
	s.Server.NegativeCounterValues, a.negativeCounters = a.negativeCounters, 0
	s.Server.EventsIgnored, a.events = a.events, 0
	s.Server.ServiceChecksIgnored, a.serviceChecks = a.serviceChecks, 0
	a.reset()
	return s
}

// evicting returns whether a key last seen at a given flush count is to
// be evicted now: never below the key cap, else when it received nothing
// for EvictIdleFlushes intervals (this one included).
func (a *Aggregator) evicting() func(seen uint64) bool {
	if a.cfg.EvictIdleFlushes < 1 || a.keys < a.cfg.MaxKeys {
		return func(uint64) bool { return false }
	}
	idle := uint64(a.cfg.EvictIdleFlushes)
	return func(seen uint64) bool { return a.flushes-seen >= idle }
}

// reset clears the interval's values as Etsy's clear_metrics does.
func (a *Aggregator) reset() {
	for k, c := range a.counters {
		if a.cfg.DeleteCounters && !keepCounter(k) {
			delete(a.counters, k)
			a.forget(c.own)
			continue
		}
		c.value, c.increase, c.decrease = 0, 0, 0
	}
	for k, t := range a.timers {
		if a.cfg.DeleteTimers {
			delete(a.timers, k)
			a.forget(false)
			continue
		}
		t.count, t.weights = 0, nil
		// The snapshot keeps this interval's values until the next
		// flush; the next interval fills the buffer of the snapshot
		// before it.
		next := t.spare[:0]
		t.spare = t.values
		if cap(t.spare) > keepTimerCap {
			t.spare = nil // a burst's memory goes back with its snapshot
		}
		t.values = next
	}
	for k, set := range a.sets {
		if a.cfg.DeleteSets {
			delete(a.sets, k)
			a.forget(false)
			continue
		}
		if len(set.members) > keepSetMembers {
			// Go maps keep their size when cleared: a burst's memory
			// goes back now, not when the key goes.
			set.members = make(map[string]struct{})
			continue
		}
		clear(set.members)
	}
	if a.cfg.DeleteGauges {
		for k, g := range a.gauges {
			if g.ttl < 0 {
				continue
			}
			if g.ttl--; g.ttl < 1 {
				// The own gauge (timestamp_lag) has a TTL once a client
				// sets it, as at Etsy; it never counted as a key.
				delete(a.gauges, k)
				a.forget(g.own)
			}
		}
	}
	a.samples, a.members, a.dropped = 0, 0, Drops{}
}

func (a *Aggregator) forget(own bool) {
	if !own {
		a.keys--
	}
}

// keepTimerCap is the largest timer buffer kept from one interval to
// the next, keepSetMembers the most members of a set whose map is
// cleared and kept rather than made anew.
const (
	keepTimerCap   = 4096
	keepSetMembers = 1024
)

// keepCounter: with deleteCounters, Etsy still keeps (at 0) every
// counter whose key contains the name of one of its own counters.
func keepCounter(key string) bool {
	return strings.Contains(key, "packets_received") || strings.Contains(key, "metrics_received") ||
		strings.Contains(key, "bad_lines_seen")
}

// timerStats appends the statistics of one timer, in the order and with
// the floating-point operations of Etsy's process_metrics.js, so that
// every value is the same double.
func (a *Aggregator) timerStats(dst []Stat, key string, t *timerState, interval float64) []Stat {
	names := &a.timerNames
	count := len(t.values)
	if count == 0 {
		dst = names.add(dst, statCount, 0)
		return names.add(dst, statCountPS, 0)
	}
	values := t.values
	if t.weights != nil {
		sort.Sort(weighted{values, t.weights})
	} else {
		slices.Sort(values)
	}
	min, max := values[0], values[count-1]
	cumul := make([]float64, count)
	cumulSq := make([]float64, count)
	cumul[0], cumulSq[0] = min, min*min
	for i := 1; i < count; i++ {
		cumul[i] = values[i] + cumul[i-1]
		cumulSq[i] = values[i]*values[i] + cumulSq[i-1]
	}
	sum, sumSquares, mean, boundary := min, min*min, min, max
	for i, pct := range a.cfg.PercentThreshold {
		num := count
		if count > 1 {
			num = int(jsRound(math.Abs(pct) / 100 * float64(count)))
			if num == 0 {
				continue
			}
			if pct > 0 {
				boundary = values[num-1]
				sum = cumul[num-1]
				sumSquares = cumulSq[num-1]
			} else {
				boundary = values[count-num]
				// JavaScript reads cumul[-1] as undefined: NaN.
				before, beforeSq := math.NaN(), math.NaN()
				if count-num-1 >= 0 {
					before, beforeSq = cumul[count-num-1], cumulSq[count-num-1]
				}
				sum = cumul[count-1] - before
				sumSquares = cumulSq[count-1] - beforeSq
			}
			mean = sum / float64(num)
		}
		p := &names.pct[i]
		dst = p.add(dst, pctCount, float64(num))
		dst = p.add(dst, pctMean, mean)
		dst = p.add(dst, pctBound, boundary)
		dst = p.add(dst, pctSum, sum)
		dst = p.add(dst, pctSumSquares, sumSquares)
	}
	sum, sumSquares = cumul[count-1], cumulSq[count-1]
	mean = sum / float64(count)
	sumOfDiffs := 0.0
	for _, v := range values {
		sumOfDiffs += (v - mean) * (v - mean)
	}
	mid := count / 2
	median := values[mid]
	if count%2 == 0 {
		median = (values[mid-1] + values[mid]) / 2
	}
	dst = names.add(dst, statStd, math.Sqrt(sumOfDiffs/float64(count)))
	dst = names.add(dst, statUpper, max)
	dst = names.add(dst, statLower, min)
	dst = names.add(dst, statCount, t.count)
	dst = names.add(dst, statCountPS, t.count/(interval/1000))
	dst = names.add(dst, statSum, sum)
	dst = names.add(dst, statSumSquares, sumSquares)
	dst = names.add(dst, statMean, mean)
	dst = names.add(dst, statMedian, median)
	if names.keep[statHistogram] {
		dst = appendHistogram(dst, a.cfg.Histogram, names.bins, key, values)
	}
	return dst
}

// weighted sorts values with their weights.
type weighted struct{ values, weights []float64 }

func (w weighted) Len() int           { return len(w.values) }
func (w weighted) Less(i, j int) bool { return w.values[i] < w.values[j] }
func (w weighted) Swap(i, j int) {
	w.values[i], w.values[j] = w.values[j], w.values[i]
	w.weights[i], w.weights[j] = w.weights[j], w.weights[i]
}

// appendHistogram counts the sorted values per bin of the first
// histogram whose Metric the key contains. Values at or above the last
// limit are not counted (Etsy: "by design").
func appendHistogram(dst []Stat, hs []HistogramConfig, binNames [][]string, key string, values []float64) []Stat {
	for h := range hs {
		if !strings.Contains(key, hs[h].Metric) {
			continue
		}
		i := 0
		for b, limit := range hs[h].Bins {
			freq := 0
			for ; i < len(values) && values[i] < limit; i++ {
				freq++
			}
			dst = append(dst, Stat{Name: binNames[h][b], Value: float64(freq)})
		}
		return dst
	}
	return dst
}
