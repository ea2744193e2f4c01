package statsd

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// GraphiteConfig configures the Graphite plaintext backend. The names in
// parentheses are Etsy statsd's options (graphiteHost/graphitePort, and
// those of its graphite object); the defaults are Etsy's, so existing
// dashboards keep working.
type GraphiteConfig struct {
	// Address is the host:port of Carbon's plaintext listener. Required.
	Address string
	// NoLegacyNamespace selects Etsy's newer layout (legacyNamespace:
	// false): "stats.counters.<key>.rate" instead of "stats.<key>".
	NoLegacyNamespace bool
	// GlobalPrefix, PrefixCounter, PrefixTimer, PrefixGauge, PrefixSet
	// (graphite.globalPrefix, ...) apply to the newer layout; nil means
	// Etsy's default ("stats", "counters", "timers", "gauges", "sets"),
	// and "" leaves the level out.
	GlobalPrefix, PrefixCounter, PrefixTimer, PrefixGauge, PrefixSet *string
	// GlobalSuffix (graphite.globalSuffix) follows every name.
	GlobalSuffix string
	// PrefixStats (prefixStats) names the server's own metrics. Default
	// "statsd".
	PrefixStats string
	// NoFlushCounts (flush_counts: false) leaves out the counts of
	// counters ("stats_counts.<key>").
	NoFlushCounts bool
	// Sanitize sanitizes names here; set it when the server does not
	// (keyNameSanitize: false), as Etsy's backend does.
	Sanitize bool
	// Self adds the server's own metrics beyond Etsy's (SelfStats) as
	// "<global>.<prefixStats>.server.*".
	Self bool
}

// Graphite writes each flush to Carbon's plaintext protocol, one TCP
// connection per flush as Etsy's backend does, with Etsy's key layout
// and number formatting.
type Graphite struct {
	cfg GraphiteConfig
	// Namespaces, as Etsy's graphite.js builds them.
	global, counters, timers, gauges, sets []string
	// What the previous flush measured (Etsy's graphiteStats); before
	// the first flush, lastFlush is the start-up time, as Etsy's.
	lastFlush, lastException int64
	flushTime, flushLength   int64
	buf                      []byte
}

// NewGraphite returns a Graphite backend. Its first flush reports the
// time NewGraphite was called as graphiteStats.last_flush, as Etsy's
// reports its start-up time (backends/graphite.js init).
func NewGraphite(cfg GraphiteConfig) (*Graphite, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &Graphite{cfg: cfg, lastFlush: jsRoundSeconds(time.Now())}
	if !cfg.NoLegacyNamespace {
		g.global, g.counters = []string{"stats"}, []string{"stats"}
		g.timers, g.gauges, g.sets = []string{"stats", "timers"}, []string{"stats", "gauges"}, []string{"stats", "sets"}
		return g, nil
	}
	level := func(p *string, def string) []string {
		switch {
		case p == nil:
			return []string{def}
		case *p == "":
			return nil
		}
		return []string{*p}
	}
	g.global = level(cfg.GlobalPrefix, "stats")
	g.counters = append(g.global[:len(g.global):len(g.global)], level(cfg.PrefixCounter, "counters")...)
	g.timers = append(g.global[:len(g.global):len(g.global)], level(cfg.PrefixTimer, "timers")...)
	g.gauges = append(g.global[:len(g.global):len(g.global)], level(cfg.PrefixGauge, "gauges")...)
	g.sets = append(g.global[:len(g.global):len(g.global)], level(cfg.PrefixSet, "sets")...)
	return g, nil
}

func (c *GraphiteConfig) setDefaults() {
	if c.PrefixStats == "" {
		c.PrefixStats = DefaultPrefixStats
	}
}

func (c *GraphiteConfig) validate() error {
	return checkDialAddr("Address", "tcp", c.Address, "127.0.0.1:2003")
}

// Address is Carbon's address.
func (g *Graphite) Address() string { return g.cfg.Address }

// Name is "graphite".
func (g *Graphite) Name() string { return "graphite" }

// Flush connects, writes the flush and closes.
func (g *Graphite) Flush(ctx context.Context, s *Snapshot) error {
	g.buf = g.Append(g.buf[:0], s)
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", g.cfg.Address)
	if err != nil {
		g.lastException = time.Now().Unix()
		return fmt.Errorf("graphite %s: %w", g.cfg.Address, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetWriteDeadline(dl)
	}
	// Etsy adds its graphiteStats when connected, with the values of
	// the previous flush.
	now := time.Now()
	g.buf = g.appendGraphiteStats(g.buf, jsRoundSeconds(now))
	start := time.Now()
	if _, err := c.Write(g.buf); err != nil {
		g.lastException = time.Now().Unix()
		return fmt.Errorf("graphite %s: %w", g.cfg.Address, err)
	}
	g.flushTime = time.Since(start).Milliseconds()
	g.flushLength = int64(len(g.buf))
	g.lastFlush = jsRoundSeconds(time.Now())
	return nil
}

func jsRoundSeconds(t time.Time) int64 { return int64(jsRound(float64(t.UnixMilli()) / 1000)) }

// Append appends the plaintext lines of a flush, without Etsy's
// graphiteStats (which Flush adds once connected), to b.
func (g *Graphite) Append(b []byte, s *Snapshot) []byte {
	start := time.Now()
	ts := s.Timestamp
	numStats := 0
	for _, c := range s.Counters {
		if !g.cfg.NoLegacyNamespace {
			b = g.line(b, g.counters, c.Key, "", c.Rate, ts)
			if !g.cfg.NoFlushCounts {
				b = g.line(b, []string{"stats_counts"}, c.Key, "", c.Count, ts)
			}
		} else {
			b = g.line(b, g.counters, c.Key, "rate", c.Rate, ts)
			if !g.cfg.NoFlushCounts {
				b = g.line(b, g.counters, c.Key, "count", c.Count, ts)
			}
		}
		numStats++
	}
	for _, t := range s.Timers {
		for _, st := range t.Stats {
			b = g.line(b, g.timers, t.Key, st.Name, st.Value, ts)
		}
		numStats++
	}
	for _, v := range s.Gauges {
		b = g.line(b, g.gauges, v.Key, "", v.Value, ts)
		numStats++
	}
	for _, v := range s.Sets {
		b = g.line(b, g.sets, v.Key, "count", float64(v.Count), ts)
		numStats++
	}
	p := g.cfg.PrefixStats
	calc := float64(time.Since(start).Milliseconds())
	own := []Stat{{"processing_time", float64(s.Server.ProcessingTime.Milliseconds())}}
	if g.cfg.Self {
		own = append(own, s.SelfStats()...)
	}
	if !g.cfg.NoLegacyNamespace {
		b = g.raw(b, p+".numStats", float64(numStats), ts)
		b = g.raw(b, "stats."+p+".graphiteStats.calculationtime", calc, ts)
		for _, st := range own {
			b = g.raw(b, "stats."+p+"."+st.Name, st.Value, ts)
		}
	} else {
		b = g.line(b, g.global, p, "numStats", float64(numStats), ts)
		b = g.line(b, g.global, p, "graphiteStats.calculationtime", calc, ts)
		for _, st := range own {
			b = g.line(b, g.global, p, st.Name, st.Value, ts)
		}
	}
	return b
}

func (g *Graphite) appendGraphiteStats(b []byte, ts int64) []byte {
	ns := strings.Join(append(g.global[:len(g.global):len(g.global)], g.cfg.PrefixStats), ".")
	b = g.raw(b, ns+".graphiteStats.last_exception", float64(g.lastException), ts)
	b = g.raw(b, ns+".graphiteStats.last_flush", float64(g.lastFlush), ts)
	b = g.raw(b, ns+".graphiteStats.flush_time", float64(g.flushTime), ts)
	return g.raw(b, ns+".graphiteStats.flush_length", float64(g.flushLength), ts)
}

// line appends one metric named as Etsy's format(namespace, key, stat)
// does: the namespace, the key's name and the stat joined by dots, then
// the global suffix, then the key's ";tags".
func (g *Graphite) line(b []byte, namespace []string, key, stat string, v float64, ts int64) []byte {
	name, tags := key, ""
	if i := strings.IndexByte(key, ';'); i >= 0 {
		name, tags = key[:i], key[i:]
	}
	for _, n := range namespace {
		b = append(b, n...)
		b = append(b, '.')
	}
	if g.cfg.Sanitize {
		b = appendSanitized(b, []byte(name))
	} else {
		b = append(b, name...)
	}
	if stat != "" {
		b = append(b, '.')
		b = append(b, stat...)
	}
	if g.cfg.GlobalSuffix != "" {
		b = append(b, '.')
		b = append(b, g.cfg.GlobalSuffix...)
	}
	b = appendCarbonTags(b, tags)
	return g.value(b, v, ts)
}

// appendCarbonTags appends a key's tags (";k=v;flag;...") in a form
// carbon 1.1 accepts (carbon/util.py TaggedSeries.validateTagAndValue):
// a bare tag becomes flag=true, as on Prometheus; a tag with an empty
// name or value is left out (carbon refuses it: the key only has one
// with keyNameSanitize off, or written in the name); a '!' or '^' in a
// name and a '~' starting a value become '_'.
func appendCarbonTags(b []byte, tags string) []byte {
	tags = strings.TrimPrefix(tags, ";")
	for tags != "" {
		var tag string
		tag, tags, _ = strings.Cut(tags, ";")
		k, v, ok := strings.Cut(tag, "=")
		if !ok {
			v = "true"
		}
		if k == "" || v == "" {
			continue
		}
		b = append(b, ';')
		at := len(b)
		b = append(b, k...)
		for i := at; i < len(b); i++ {
			if b[i] == '!' || b[i] == '^' {
				b[i] = '_'
			}
		}
		b = append(b, '=')
		if v[0] == '~' {
			b = append(b, '_')
			v = v[1:]
		}
		b = append(b, v...)
	}
	return b
}

// raw appends one metric whose name is complete but for the suffix.
func (g *Graphite) raw(b []byte, name string, v float64, ts int64) []byte {
	b = append(b, name...)
	if g.cfg.GlobalSuffix != "" {
		b = append(b, '.')
		b = append(b, g.cfg.GlobalSuffix...)
	}
	return g.value(b, v, ts)
}

func (g *Graphite) value(b []byte, v float64, ts int64) []byte {
	b = append(b, ' ')
	b = appendJSNumber(b, v)
	b = append(b, ' ')
	b = strconv.AppendInt(b, ts, 10)
	return append(b, '\n')
}
