package statsd

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// promState is the cumulative value of one series of the user's.
type promState struct {
	gen   uint64
	total float64 // counter
	// Histograms: bounds, the count of each bucket (not cumulative)
	// and of the overflow last; histograms and summaries: sum, count.
	bounds     []float64
	counts     []float64
	sum, count float64
}

// promEntry is one statsd key competing for a series.
type promEntry struct {
	key   string
	kind  promKind
	n     *promNaming
	value float64     // counter: the interval's Increase; gauge, set: the value
	dec   float64     // counter: the interval's Decrease
	timer *TimerValue // timers
}

// pageFamily is one metric family of the page being built.
type pageFamily struct {
	name, typ, help string
	own             bool
	entries         []promEntry
	series          []*pageSeries
	index           map[string]*pageSeries
}

// pageSeries is one series of a family, ready to write.
type pageSeries struct {
	labels string
	value  float64 // counter, gauge
	// Histograms: bucket upper bounds and cumulative counts; summaries:
	// quantiles and their values.
	bounds, counts []float64
	sum, count     float64
	// Within the flush: the interval's part of a histogram or summary.
	interval intervalObs
	// key is the key that made the series (for the log).
	key string
}

// intervalObs is what a timer (or timers merged) observed over the
// interval.
type intervalObs struct {
	counts     []float64 // histogram buckets, then the overflow
	quantiles  []float64
	sum, count float64
}

// famID names a family of the page; the server's own are apart from
// the user's, so that a user's key cannot slip into one.
type famID struct {
	name, typ string
	own       bool
}

// page is the exposition being built.
type page struct {
	families map[famID]*pageFamily
	// left and merged describe the keys left out of the page and merged
	// into another's series at this flush, for the log.
	left, merged []string
	// dropped counts the keys left out, by reason.
	dropped map[string]uint64
}

func (pg *page) family(name, typ, help string, own bool) *pageFamily {
	id := famID{name, typ, own}
	f := pg.families[id]
	if f == nil {
		f = &pageFamily{name: name, typ: typ, help: help, own: own, index: make(map[string]*pageSeries)}
		pg.families[id] = f
	}
	return f
}

// add appends a ready series to an own family.
func (f *pageFamily) add(labels string, v float64) {
	s := &pageSeries{labels: labels, value: v}
	f.series = append(f.series, s)
	f.index[labels] = s
}

// Reasons a key is left out of the page.
const (
	dropCollision = "collision"
	dropMapping   = "mapping"
	dropNoName    = "no_name"
)

var dropReasons = []string{dropCollision, dropMapping, dropNoName}

// typeRank orders the families of one name: the first claims it.
func typeRank(typ string) int {
	switch typ {
	case promCounter:
		return 0
	case promGauge:
		return 1
	case promHistogram:
		return 2
	}
	return 3
}

// claims are the sample names a family writes, and the names the text
// parsers would take as its own: a histogram or summary reserves all
// of _sum, _count and _bucket.
func claims(name, typ string) []string {
	if typ == promHistogram || typ == promSummary {
		return []string{name, name + "_sum", name + "_count", name + "_bucket"}
	}
	return []string{name}
}

// Render returns the exposition of s and updates the cumulative values.
func (p *Prometheus) Render(s *Snapshot) []byte {
	p.gen++
	pg := &page{families: make(map[famID]*pageFamily), dropped: make(map[string]uint64)}
	p.renderSelf(pg, s)
	p.collect(pg, s)

	fams := make([]*pageFamily, 0, len(pg.families))
	for _, f := range pg.families {
		fams = append(fams, f)
	}
	slices.SortFunc(fams, func(a, b *pageFamily) int {
		if a.own != b.own {
			if a.own {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(typeRank(a.typ), typeRank(b.typ)))
	})
	claimed := make(map[string]*pageFamily)
	kept := fams[:0]
	for _, f := range fams {
		var by *pageFamily
		for _, c := range claims(f.name, f.typ) {
			if by = claimed[c]; by != nil {
				break
			}
		}
		if by != nil {
			for _, e := range f.entries {
				pg.leaveOut(fmt.Sprintf("%s %q: %s %s is taken by %s %s", kindNames[e.kind], e.key, f.typ, f.name, by.typ, by.name))
			}
			continue
		}
		for _, c := range claims(f.name, f.typ) {
			claimed[c] = f
		}
		if !f.own {
			p.resolve(pg, f)
		}
		kept = append(kept, f)
	}
	p.selfPage(pg)
	p.forget()
	p.logCollisions(pg)
	slices.SortFunc(kept, func(a, b *pageFamily) int { return strings.Compare(a.name, b.name) })
	return writePage(kept)
}

var kindNames = [numKinds]string{"counter", "gauge", "set", "timer"}

func (pg *page) leaveOut(why string) {
	pg.dropped[dropCollision]++
	if len(pg.left) < 5 {
		pg.left = append(pg.left, why)
	}
}

// collect gathers the snapshot's keys into families, by name and type.
func (p *Prometheus) collect(pg *page, s *Snapshot) {
	add := func(kind promKind, key string, v, dec float64, t *TimerValue) {
		n := p.namings[kind][key]
		if n == nil {
			n = p.naming(kind, key)
			p.namings[kind][key] = n
		}
		n.gen = p.gen
		switch {
		case n.drop:
			pg.dropped[dropMapping]++
			return
		case n.empty:
			pg.dropped[dropNoName]++
			return
		}
		f := pg.family(n.family, n.typ, "", false)
		f.entries = append(f.entries, promEntry{key: key, kind: kind, n: n, value: v, dec: dec, timer: t})
	}
	for _, c := range s.Counters {
		if !c.Own {
			// A Prometheus counter never decreases: the values that are
			// negative once scaled are left out, as statsd_exporter
			// refuses them (see observe).
			add(kindCounter, c.Key, c.Increase, c.Decrease, nil)
		}
	}
	for _, g := range s.Gauges {
		if !g.Own {
			add(kindGauge, g.Key, g.Value, 0, nil)
		}
	}
	for _, st := range s.Sets {
		add(kindSet, st.Key, float64(st.Count), 0, nil)
	}
	for i := range s.Timers {
		add(kindTimer, s.Timers[i].Key, 0, 0, &s.Timers[i])
	}
}

// userHelp is the HELP text of a family of the user's: the mapping's,
// else what the statsd key was.
func userHelp(kind promKind, key string, n *promNaming, t *TimerValue) string {
	if n.help != "" {
		return n.help
	}
	name, _, _ := strings.Cut(key, ";")
	switch kind {
	case kindCounter:
		return "StatsD counter " + name + ": the sum of its values, each times 1/sample rate."
	case kindGauge:
		return "StatsD gauge " + name + "."
	case kindSet:
		return "StatsD set " + name + ": unique members over the last flush interval."
	}
	unit := "in seconds"
	if t.Type != Timer {
		unit = "as sent"
	}
	if n.typ == promSummary {
		return "StatsD " + t.Type.String() + " " + name + ", " + unit + "; quantiles over the last flush interval."
	}
	return "StatsD " + t.Type.String() + " " + name + ", " + unit + "."
}

// resolve makes the series of a family from its keys, in key order:
// keys with the same labels merge when nothing is lost (counters,
// histograms with the same buckets), else the first is kept.
func (p *Prometheus) resolve(pg *page, f *pageFamily) {
	slices.SortFunc(f.entries, func(a, b promEntry) int {
		return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.kind, b.kind))
	})
	first := &f.entries[0]
	f.help = userHelp(first.kind, first.key, first.n, first.timer)
	for i := range f.entries {
		e := &f.entries[i]
		s := f.index[e.n.labelStr]
		if s == nil {
			s = &pageSeries{labels: e.n.labelStr, key: e.key}
			f.series = append(f.series, s)
			f.index[s.labels] = s
			p.observe(f, s, e)
			continue
		}
		if f.typ == promCounter || f.typ == promHistogram && slices.Equal(s.bounds, e.n.buckets) {
			p.observe(f, s, e)
			if len(pg.merged) < 5 {
				pg.merged = append(pg.merged, fmt.Sprintf("%s %q into %s{%s} with %q", kindNames[e.kind], e.key, f.name, s.labels, s.key))
			}
			pg.dropped["merged"]++
			continue
		}
		pg.leaveOut(fmt.Sprintf("%s %q: %s{%s} is %q's", kindNames[e.kind], e.key, f.name, s.labels, s.key))
	}
	for _, s := range f.series {
		p.accumulate(f, s)
	}
}

// observe adds one key's interval to a series.
func (p *Prometheus) observe(f *pageFamily, s *pageSeries, e *promEntry) {
	switch f.typ {
	case promCounter:
		// statsd_exporter scales each value, then refuses those below
		// zero: with a negative scale, the values below zero are the
		// ones that count. Either way the increment is not negative.
		v := e.value
		if e.n.scale < 0 {
			v = e.dec
		}
		s.value += v * e.n.scale
		return
	case promGauge:
		s.value = e.value * e.n.scale
		return
	}
	t := e.timer
	factor := e.n.scale
	if t.Type == Timer {
		factor /= 1000 // milliseconds to seconds, as statsd_exporter
	}
	// Each value counts 1/its rate times (statsd_exporter observes it
	// int(1/rate) times): Count/len(Values) each when they all had the
	// same rate, else its own weight.
	uniform := 0.0
	if len(t.Values) > 0 {
		uniform = t.Count / float64(len(t.Values))
	}
	in := &s.interval
	if t.Weights == nil {
		var sum float64
		for _, v := range t.Values {
			sum += v
		}
		in.sum += sum * factor * uniform
	} else {
		for i, v := range t.Values {
			in.sum += v * factor * t.Weights[i]
		}
	}
	in.count += t.Count
	if f.typ == promHistogram {
		if s.bounds == nil {
			s.bounds = e.n.buckets
			in.counts = make([]float64, len(s.bounds)+1)
		}
		for i, v := range t.Values {
			w := uniform
			if t.Weights != nil {
				w = t.Weights[i]
			}
			in.counts[sort.SearchFloat64s(s.bounds, v*factor)] += w
		}
		return
	}
	s.bounds = e.n.quantiles
	in.quantiles = make([]float64, len(s.bounds))
	for i, q := range s.bounds {
		in.quantiles[i] = etsyQuantile(t.Values, q) * factor
	}
}

// etsyQuantile is quantile q of sorted values as Etsy computes its
// median (q = 0.5) and upper_N (values[round(N/100 × n) − 1]); NaN
// without values.
func etsyQuantile(values []float64, q float64) float64 {
	n := len(values)
	switch {
	case n == 0:
		return math.NaN()
	case q == 0.5:
		if n%2 == 0 {
			return (values[n/2-1] + values[n/2]) / 2
		}
		return values[n/2]
	}
	i := int(jsRound(q * float64(n)))
	return values[min(max(i, 1), n)-1]
}

// accumulate adds the interval of a series to its cumulative state and
// sets what is written.
func (p *Prometheus) accumulate(f *pageFamily, s *pageSeries) {
	if f.typ == promGauge {
		return
	}
	id := f.name + "\x00" + f.typ + "\x00" + s.labels
	st := p.state[id]
	if st == nil {
		st = &promState{}
		p.state[id] = st
	}
	st.gen = p.gen
	switch f.typ {
	case promCounter:
		// A counter stays a finite number: an increment that is not
		// (values summing past ±MaxFloat64 over the interval), or that
		// would take the counter there, is left out and counted.
		if next := st.total + s.value; finite(next) {
			st.total = next
		} else {
			p.nonFinite++
		}
		s.value = st.total
		return
	case promHistogram:
		if !slices.Equal(st.bounds, s.bounds) {
			*st = promState{gen: p.gen, bounds: s.bounds, counts: make([]float64, len(s.bounds)+1)}
		}
		// Like a counter's, an interval that would make the sum or a
		// bucket not finite (values, or the counts 1/rate of small
		// sample rates, summing past ±MaxFloat64) is left out and
		// counted.
		total := 0.0
		for i, c := range s.interval.counts {
			total += st.counts[i] + c
		}
		if finite(total) && finite(st.sum+s.interval.sum) {
			for i, c := range s.interval.counts {
				st.counts[i] += c
			}
			st.sum += s.interval.sum
		} else {
			p.nonFinite++
		}
		s.counts = make([]float64, len(s.bounds))
		cum := 0.0
		for i, c := range st.counts {
			cum += c
			if i < len(s.counts) {
				s.counts[i] = cum
			}
		}
		// The +Inf bucket and _count are the same sum, so the buckets
		// never exceed the count by a rounding error.
		st.count = cum
		s.sum, s.count = st.sum, st.count
		return
	case promSummary:
		s.counts = s.interval.quantiles
	}
	if finite(st.sum+s.interval.sum) && finite(st.count+s.interval.count) {
		st.sum += s.interval.sum
		st.count += s.interval.count
	} else {
		p.nonFinite++
	}
	s.sum, s.count = st.sum, st.count
}

// finite reports whether v is a number, neither infinite nor NaN: what
// a counter, a histogram or a summary accumulates is kept so.
func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// forget drops the state and namings of the keys this flush did not
// have.
func (p *Prometheus) forget() {
	for id, st := range p.state {
		if st.gen != p.gen {
			delete(p.state, id)
		}
	}
	for _, m := range p.namings {
		for k, n := range m {
			if n.gen != p.gen {
				delete(m, k)
			}
		}
	}
}

// logCollisions logs the keys left out or merged, at most once per
// LogGap, with the counts since the last line.
func (p *Prometheus) logCollisions(pg *page) {
	n := int(pg.dropped[dropCollision] + pg.dropped["merged"])
	if n == 0 {
		return
	}
	p.unlogged += n
	now := p.cfg.Now()
	if !p.lastLog.IsZero() && now.Sub(p.lastLog) < p.cfg.LogGap {
		return
	}
	p.lastLog = now
	p.cfg.Logger.Warn("statsd: prometheus: keys whose names collide on the page (counted in statsd_server_prometheus_dropped_total and _merged_total; logged at most once per interval)",
		"since_last_log", p.unlogged, "left_out", strings.Join(pg.left, "; "), "merged", strings.Join(pg.merged, "; "))
	p.unlogged = 0
}

// writePage writes the families in the text format.
func writePage(fams []*pageFamily) []byte {
	var b []byte
	for _, f := range fams {
		slices.SortFunc(f.series, func(x, y *pageSeries) int { return strings.Compare(x.labels, y.labels) })
		b = append(b, "# HELP "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, promHelp(f.help)...)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, f.typ...)
		b = append(b, '\n')
		for _, s := range f.series {
			switch f.typ {
			case promCounter, promGauge:
				b = sample(b, f.name, "", s.labels, "", "", s.value)
			case promHistogram:
				for i, le := range s.bounds {
					b = sample(b, f.name, "_bucket", s.labels, "le", formatBound(le), s.counts[i])
				}
				b = sample(b, f.name, "_bucket", s.labels, "le", "+Inf", s.count)
				b = sample(b, f.name, "_sum", s.labels, "", "", s.sum)
				b = sample(b, f.name, "_count", s.labels, "", "", s.count)
			case promSummary:
				for i, q := range s.bounds {
					b = sample(b, f.name, "", s.labels, "quantile", formatBound(q), s.counts[i])
				}
				b = sample(b, f.name, "_sum", s.labels, "", "", s.sum)
				b = sample(b, f.name, "_count", s.labels, "", "", s.count)
			}
		}
	}
	return b
}

func formatBound(v float64) string { return string(appendPromFloat(nil, v)) }

// sample writes one line: name+suffix{labels,extra="value"} v.
func sample(b []byte, name, suffix, labels, extra, extraValue string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if labels != "" || extra != "" {
		b = append(b, '{')
		b = append(b, labels...)
		if extra != "" {
			if labels != "" {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, `="`...)
			b = append(b, extraValue...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendPromFloat(b, v)
	return append(b, '\n')
}
