package statsd

import "crypto/sha256"

// Aggregator keeps the metrics between two flushes and computes each
// flush as Etsy statsd 0.9.0 does (stats.js and lib/process_metrics.js).
// It does no I/O and reads no clock: the caller passes the flush time.
// It is not safe for concurrent use.
type Aggregator struct {
	cfg AggregatorConfig
	// timerNames are the statistic names of every timer, computed once.
	timerNames timerNames

	counters map[string]*counterState
	gauges   map[string]*gaugeState
	timers   map[string]*timerState
	sets     map[string]*setState
	// keys counts the entries of the four maps that MaxKeys bounds: all
	// but the server's own.
	keys int
	// packets, lines and bad are Etsy's own counters, kept in counters
	// under "<prefix>.packets_received" etc., as Etsy keeps them.
	packets, lines, bad *counterState
	lagKey              string
	lastTimestamp       int64
	// flushes counts the flushes so far: a key's seen is the value it
	// had when the key last received a value.
	flushes uint64
	// negativeCounters counts the counter values below zero this interval.
	negativeCounters uint64
	// events and serviceChecks count the DogStatsD events and service
	// checks this interval (CountIgnored).
	events, serviceChecks uint64

	// Between two flushes:
	samples, members int
	dropped          Drops
	seq              seqTracker
}

type counterState struct {
	value float64
	// increase is the sum of the values not below zero (the
	// Prometheus counter's increment), kept apart from value: value
	// less the part below zero is NaN once that part is infinite.
	increase float64
	// decrease is the sum of the values below zero: what a mapping
	// with a negative scale turns into the counter's increment.
	decrease float64
	seen     uint64
	own      bool
}

type gaugeState struct {
	value float64
	seen  uint64
	// ttl is the flushes left before a gauge that is not set again is
	// deleted (DeleteGauges); -1 for a gauge that never expires.
	ttl int
	own bool
}

type timerState struct {
	values []float64
	// spare is the buffer of the previous flush's snapshot, reused
	// once that snapshot has expired (at the next flush).
	spare []float64
	// weights are the 1/rate of each value, in step with values, once
	// a value came with a rate other than the interval's first (whose
	// 1/rate is weight); nil while every value has the same.
	weights []float64
	weight  float64
	count   float64
	seen    uint64
	// typ is the type of the key's first value: Timer, Histogram or
	// Distribution.
	typ Type
}

type setState struct {
	members map[string]struct{}
	seen    uint64
}

// Drops counts what the aggregator refused since the last flush.
type Drops struct {
	// Keys: values for a new key when MaxKeys keys existed.
	Keys uint64
	// TimerSamples and SetMembers: values beyond MaxTimerSamples and
	// MaxSetMembers.
	TimerSamples, SetMembers uint64
	// Clients: sequence lines of new clients when MaxClients were
	// tracked.
	Clients uint64
}

// NewAggregator returns an empty Aggregator.
func NewAggregator(cfg AggregatorConfig) (*Aggregator, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Aggregator{
		cfg:        cfg,
		timerNames: newTimerNames(cfg.PercentThreshold, cfg.CalculatedTimerMetrics, cfg.Histogram),
		counters:   make(map[string]*counterState),
		gauges:     make(map[string]*gaugeState),
		timers:     make(map[string]*timerState),
		sets:       make(map[string]*setState),
		lagKey:     cfg.PrefixStats + ".timestamp_lag",
		seq:        seqTracker{max: cfg.MaxClients, idleFlushes: cfg.ClientIdleFlushes},
	}
	own := func(name string) *counterState {
		c := &counterState{own: true}
		a.counters[cfg.PrefixStats+"."+name] = c
		return c
	}
	a.bad, a.packets, a.lines = own("bad_lines_seen"), own("packets_received"), own("metrics_received")
	return a, nil
}

// Config returns the configuration in force, defaults filled in.
func (a *Aggregator) Config() AggregatorConfig { return a.cfg }

// CountPacket adds to Etsy's own counters: packets received, non-empty
// lines (metrics_received) and bad values (bad_lines_seen).
func (a *Aggregator) CountPacket(packets, lines, bad int) {
	a.packets.value += float64(packets)
	a.lines.value += float64(lines)
	a.bad.value += float64(bad)
}

// CountIgnored counts DogStatsD events and service checks, which are
// not metrics and have no backend here (ServerStats.EventsIgnored,
// ServiceChecksIgnored). Parser.AppendLine gives no metric for them
// (see IsEvent, IsServiceCheck).
func (a *Aggregator) CountIgnored(events, serviceChecks int) {
	a.events += uint64(events)
	a.serviceChecks += uint64(serviceChecks)
}

// Add aggregates one metric. It reports false when the metric was
// dropped by a limit (counted in Drops).
func (a *Aggregator) Add(m *Metric) bool {
	switch m.Type {
	case Counter:
		c := a.counters[string(m.Key)]
		if c == nil {
			if !a.newKey() {
				return false
			}
			c = &counterState{}
			a.counters[string(m.Key)] = c
		}
		v := m.Value * (1 / m.Rate)
		c.value += v
		if v < 0 {
			a.negativeCounters++
			c.decrease += v
		} else {
			c.increase += v
		}
		c.seen = a.flushes
	case Gauge:
		g := a.gauges[string(m.Key)]
		if g == nil {
			if !a.newKey() {
				return false
			}
			g = &gaugeState{ttl: -1}
			a.gauges[string(m.Key)] = g
		}
		g.seen = a.flushes
		if a.cfg.DeleteGauges {
			g.ttl = a.cfg.GaugesMaxTTL
		}
		// Etsy: a delta adds to a gauge that exists; on a new one it
		// sets the signed value, which is the same as adding to 0.
		if m.Delta {
			g.value += m.Value
		} else {
			g.value = m.Value
		}
	case Timer, Histogram, Distribution:
		if a.samples >= a.cfg.MaxTimerSamples {
			a.dropped.TimerSamples++
			return false
		}
		t := a.timers[string(m.Key)]
		if t == nil {
			if !a.newKey() {
				return false
			}
			t = &timerState{typ: m.Type}
			a.timers[string(m.Key)] = t
		}
		a.samples++
		w := 1 / m.Rate
		switch {
		case len(t.values) == 0:
			t.weight = w
		case t.weights == nil && w != t.weight:
			t.weights = make([]float64, len(t.values), cap(t.values))
			for i := range t.weights {
				t.weights[i] = t.weight
			}
		}
		t.values = append(t.values, m.Value)
		if t.weights != nil {
			t.weights = append(t.weights, w)
		}
		t.count += w
		t.seen = a.flushes
	case Set:
		s := a.sets[string(m.Key)]
		if s == nil {
			if !a.newKey() {
				return false
			}
			s = &setState{members: make(map[string]struct{})}
			a.sets[string(m.Key)] = s
		}
		s.seen = a.flushes
		var digest [sha256.Size]byte
		member := setMember(m.Member, &digest)
		if _, ok := s.members[string(member)]; ok {
			return true
		}
		if a.members >= a.cfg.MaxSetMembers {
			a.dropped.SetMembers++
			return false
		}
		a.members++
		s.members[string(member)] = struct{}{}
	case Sequence:
		if !a.seq.observe(m.Key, m.Seq) {
			a.dropped.Clients++
			return false
		}
	}
	return true
}

// setMember is what a set keeps of a member: the member itself when
// shorter than a SHA-256 digest, else its digest (in d). So a member
// costs at most 32 bytes however long it was (up to a datagram or a TCP
// line), and distinct members stay distinct: a digest is 32 bytes long,
// a member kept as it is shorter.
func setMember(m []byte, d *[sha256.Size]byte) []byte {
	if len(m) < sha256.Size {
		return m
	}
	*d = sha256.Sum256(m)
	return d[:]
}

func (a *Aggregator) newKey() bool {
	if a.keys >= a.cfg.MaxKeys {
		a.dropped.Keys++
		return false
	}
	a.keys++
	return true
}

// Keys reports how many keys of each type the aggregator holds, its own
// counters and gauge included.
func (a *Aggregator) Keys() KeyCounts {
	return KeyCounts{Counters: len(a.counters), Gauges: len(a.gauges), Timers: len(a.timers), Sets: len(a.sets)}
}

// KeyCounts are the keys of each type.
type KeyCounts struct {
	Counters, Gauges, Timers, Sets int
}
