package statsd

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientToEtsy sends what the client writes, edge cases included, to
// Etsy statsd 0.9.0 and checks that Etsy counts every line exactly: no
// bad line, every packet and line received, and the values Etsy flushes
// to Graphite are the ones the calls meant.
func TestClientToEtsy(t *testing.T) {
	sink := newGraphiteSink(t)
	e := startEtsy(t, map[string]any{
		"flushInterval": 1000, "graphiteHost": "127.0.0.1", "graphitePort": sink.port(),
	}, etsyRcvbufUntouched)
	// Send right after one of Etsy's flushes, so everything lands in the
	// next one (Etsy flushes on whole seconds; see TestEtsyEquivalence).
	for {
		_, at := sink.next(t, "Etsy")
		if at.Sub(at.Truncate(time.Second)) < 400*time.Millisecond {
			break
		}
	}
	c := newTestClient(t, ClientConfig{Addr: e.addr(), MaxPacketSize: 256, Shards: 4, FlushInterval: time.Hour})
	c.rand = func() uint64 { return 0 } // every sampled event is sent

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				c.Incr("c.agg")
				c.Count("c.agg.tagged", 2, 1, "env:prod")
			}
		}()
	}
	wg.Wait()
	for range 4 {
		c.Count("c.rated", 1, 0.25)
	}
	c.Count("c.tiny", 1, 1e-7)
	c.Count("c.neg", -3, 1)
	c.Incr("c.a:b|c\nd")       // reserved bytes in a name
	c.Incr("c.bad\xffutf8")    // non-UTF-8
	c.Incr("c.at@hash#", "k@") // '@' and '#' are no separators in a name
	c.Histogram("c.hist", 2)   // Etsy 0.9.0 counts an unknown type, "h" too

	c.Gauge("g.set", 5)
	c.Gauge("g.set", -3) // absolute, after a positive value
	c.Gauge("g.fresh", -7)
	c.Gauge("g.tiny", -1.5e-7)
	c.Gauge("g.huge", 1e21)
	c.Gauge("g.delta", 10)
	c.GaugeDelta("g.delta", -2.5)
	c.GaugeDelta("g.delta", 0)
	c.Gauge("g.negzero", math.Copysign(0, -1))
	c.Gauge("g.nan", math.NaN()) // dropped, counted

	c.Timing("t.sub", 1500*time.Microsecond)
	c.Timing("t.sub", time.Nanosecond)
	c.Timing("t.neg", -time.Millisecond) // dropped, counted: Etsy rejects it
	c.Sampled(0.5).Timing("t.rated", 4*time.Millisecond)

	c.Set("s.members", "a:b") // sent as "a_b", as is the next: one member
	c.Set("s.members", "a|b")
	c.Set("s.members", "x")
	c.Set("s.members", "x")

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Dropped != 2 || st.WriteErrors != 0 {
		t.Fatalf("client stats %+v, want 2 dropped (NaN gauge, negative timer)", st)
	}
	got, _ := sink.next(t, "Etsy")
	want := map[string]float64{
		"stats_counts.statsd.packets_received": float64(st.Packets),
		"stats_counts.statsd.metrics_received": float64(st.Lines),
		"stats_counts.statsd.bad_lines_seen":   0,

		"stats_counts.c.agg":                 1000,
		"stats_counts.c.agg.tagged;env=prod": 2000,
		"stats_counts.c.rated":               16,
		"stats_counts.c.tiny":                1e7,
		"stats_counts.c.neg":                 -3,
		"stats_counts.c.a_b_c_d":             1,
		"stats_counts.c.badutf8":             1,
		"stats_counts.c.athash;k":            1,
		"stats_counts.c.hist":                2,

		"stats.gauges.g.set":     -3,
		"stats.gauges.g.fresh":   -7,
		"stats.gauges.g.tiny":    -1.5e-7,
		"stats.gauges.g.huge":    1e21,
		"stats.gauges.g.delta":   7.5,
		"stats.gauges.g.negzero": 0,

		"stats.timers.t.sub.count":   2,
		"stats.timers.t.sub.upper":   1.5,
		"stats.timers.t.sub.lower":   0.000001,
		"stats.timers.t.rated.count": 2,
		"stats.timers.t.rated.upper": 4,

		"stats.sets.s.members.count": 2,
	}
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			diffs = append(diffs, "missing "+name)
			continue
		}
		if v, err := strconv.ParseFloat(g, 64); err != nil || v != w {
			diffs = append(diffs, name+" = "+g+", want "+strconv.FormatFloat(w, 'g', -1, 64))
		}
	}
	for name := range got {
		if strings.Contains(name, "t.neg") || strings.Contains(name, "g.nan") {
			diffs = append(diffs, "unexpected "+name)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("Etsy's flush differs:\n%s", strings.Join(diffs, "\n"))
	}
}
