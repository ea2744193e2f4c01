package statsd

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// equivSteps are the packets of each flush interval. Every step is sent
// to both servers right after both flushed, so it lands in the same
// interval on both; empty steps let stats go idle.
func equivSteps() [][]string {
	timer := func(key string, n int, scale float64, rate string) []string {
		var lines []string
		for i := 0; i < n; i++ {
			v := math.Round(scale*float64((i*7919)%97+1)*1000) / 1000
			lines = append(lines, fmt.Sprintf("%s:%v|ms%s", key, v, rate))
		}
		return lines
	}
	packet := func(lines ...[]string) string {
		var all []string
		for _, l := range lines {
			all = append(all, l...)
		}
		return strings.Join(all, "\n")
	}
	return [][]string{
		{
			packet([]string{"c.one:1|c", "c.one:3|c|@0.1", "c.two:2.5|c|@0.3", "c.two:1|c|@0.7", "c.neg:-4|c"}),
			packet([]string{"g.one:10|g", "g.one:+5|g", "g.one:-2.5|g", "g.two:-3|g", "g.three:1.1|g", "g.zero:0|g"}),
			packet(timer("t.many", 37, 0.37, ""), []string{"t.rated:5|ms|@0.5", "t.rated:7.5|ms|@0.5", "t.single:42|ms"}),
			packet([]string{"s.one:a|s", "s.one:b|s", "s.one:a|s", "s.two:x|s"}),
			packet([]string{"multi:1|c:2|ms:3|g", "a b/c!d:1|c", "tagged:1|c|#env:prod", "tagged:2|c|#env:prod"}),
			packet([]string{"bad.value:abc|c", "bad.rate:1|c|@x", "nocolon", "neg.timer:-1|ms", "", "c.one:2|c"}),
			packet([]string{"ws.t:1|ms ", "ws.c:2|c\t", "ws.g:3|g ", "ws.r:1|c|@0.5 ", "ws.r:1|c |@0.25\t", "ws.tneg:-1|ms ",
				"ws.s:5|s ", "ws.sbad:abc|s ", "ws.lead:1| c", "ws.g:+4| g\t|@0.5", "ws.nbsp:1|c\u00a0",
				"ws.blank.c: |c", "ws.blank.t:\t|ms", "ws.blank.t:2|ms", "ws.blank.g: |g", "ws.blank.s: |s "}),
			packet([]string{"colon.end:1|c:", "colon.two:2|c::", "colon.rate:1|c|@0.5:", "colon.only:"}),
			packet([]string{"kf.after:1|c|@0.5|x:2|ms", "kf.first:1|c|x:5|ms|@0.1", "kf.type:1|ms|s:2|c",
				"kf.pad:1|c|@0.5|card:2| ms|@0.25", "kf.chain:1|c|@0.5|x:2|ms:3|g|@0.5:4|s", "kf.chain2:1|c|x:5|ms:6|c|@0.1",
				"kf.end:1|c|@0.5|x:2|ms:", "kf.end2:1|c|@0.5|x:2|ms:3|g::"}),
			packet([]string{"r2.rate:1|c|@0.5|@0.25", "r2.ts:1|c|@0.5|T17x", "r2.t:1|c|@0.5|T", "r2.next:1|c|@0.5|@x:2|c|@0.1"}),
			packet([]string{"tags2.two:1|c|#k:a|#k:b", "tags2.rate:1|c|@0.5|#k:t|#u:v,w:x"}),
			packet([]string{"tagend.c:1|c:|#k:v", "tagend.two:1|c:2|#env:prod", "tagend.kf:1|c|@0.5|x:2|ms:|#k:v", "tagname|#k:1|c"}),
		},
		{
			packet(timer("t.many", 100, 1.1, ""), timer("t.two", 2, 3, "|@0.25")),
			packet([]string{"g.one:+0.1|g", "g.zero:+1|g", "c.one:1|c|@0.01", "s.one:c|s", "h.t:0.5|ms", "h.t:99|ms", "h.t:1000|ms"}),
		},
		{}, // idle: counters 0, timers count 0, sets 0, gauges kept (or all gone)
		{
			packet([]string{"c.one:5|c", "g.two:+3|g", "t.single:1|ms", "t.single:2|ms", "s.two:y|s"}),
		},
		{},
	}
}

// equivIgnored are the names whose values legitimately differ between
// two servers (times and sizes of the flush itself).
func equivIgnored(name string) bool {
	switch name {
	case "stats.statsd.processing_time", "stats.gauges.statsd.timestamp_lag",
		"stats.statsd.graphiteStats.calculationtime", "stats.statsd.graphiteStats.last_exception",
		"stats.statsd.graphiteStats.last_flush", "stats.statsd.graphiteStats.flush_time",
		"stats.statsd.graphiteStats.flush_length":
		return true
	}
	return false
}

// TestEtsyEquivalence sends the same packets to Etsy statsd 0.9.0 and to
// our server, both flushing every second to Graphite sinks, and checks
// that every flush has the same names with the same values.
func TestEtsyEquivalence(t *testing.T) {
	for _, tc := range []struct {
		name string
		etsy map[string]any
		ours AggregatorConfig
	}{
		{
			name: "defaults",
			etsy: map[string]any{
				"percentThreshold": []any{90, 50, -10, 99.9},
				"histogram":        []any{map[string]any{"metric": "h.", "bins": []any{1, 10.5, 100, "inf"}}},
			},
			ours: AggregatorConfig{
				PercentThreshold: []float64{90, 50, -10, 99.9},
				Histogram:        []HistogramConfig{{Metric: "h.", Bins: []float64{1, 10.5, 100, math.Inf(1)}}},
			},
		},
		{
			name: "deleteIdleStats",
			etsy: map[string]any{"deleteIdleStats": true},
			ours: AggregatorConfig{DeleteIdleStats: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etsySink, ourSink := newGraphiteSink(t), newGraphiteSink(t)
			tc.etsy["flushInterval"] = 1000
			tc.etsy["graphiteHost"], tc.etsy["graphitePort"] = "127.0.0.1", etsySink.port()
			e := startEtsy(t, tc.etsy, etsyRcvbufUntouched)
			g, err := NewGraphite(GraphiteConfig{Address: ourSink.ln.Addr().String(), Self: true})
			if err != nil {
				t.Fatal(err)
			}
			// Our server flushes when Etsy's does (Flush by hand, right
			// after Etsy's flush reached its sink; no Serve), so both
			// reset their state at the same points. The interval is
			// Etsy's, for the rates.
			cfg := Config{AggregatorConfig: tc.ours, Backends: []Backend{g}, UDP: []string{"127.0.0.1:0"}}
			cfg.FlushInterval = time.Second
			s, err := NewServer(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ours := s.UDPAddrs()[0].String()
			flushBoth := func() (want, got map[string]string, timely bool) {
				want, at := etsySink.next(t, "Etsy")
				s.Flush(context.Background())
				got, _ = ourSink.next(t, "ours")
				// Etsy flushes on whole seconds; packets sent within
				// 400 ms of its flush land before its next one even on
				// a loaded machine.
				return want, got, at.Sub(at.Truncate(time.Second)) < 400*time.Millisecond
			}
			// The first flush: Etsy reports its start-up time as
			// graphiteStats.last_flush, and so must we (ours started
			// right after Etsy listened).
			want, got, timely := flushBoth()
			const lastFlush = "stats.statsd.graphiteStats.last_flush"
			e0, _ := strconv.ParseInt(want[lastFlush], 10, 64)
			o0, _ := strconv.ParseInt(got[lastFlush], 10, 64)
			if e0 == 0 || o0 < e0 || o0 > e0+5 {
				t.Errorf("first flush: %s %s, Etsy %s (its start-up time)", lastFlush, got[lastFlush], want[lastFlush])
			}
			for !timely {
				_, _, timely = flushBoth()
			}
			packets := 0
			for i, step := range equivSteps() {
				sendUDP(t, e.addr(), step...)
				sendUDP(t, ours, step...)
				packets += len(step)
				waitReceived(t, s, packets, 0)
				want, got, timely := flushBoth()
				compareFlush(t, i, want, got)
				// A late flush leaves too little time before the next
				// one: let an idle interval pass on both.
				for !timely {
					want, got, timely = flushBoth()
					compareFlush(t, i, want, got)
				}
			}
		})
	}
}

func compareFlush(t *testing.T, step int, want, got map[string]string) {
	t.Helper()
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %s %s", name, w))
		case g != w && !equivIgnored(name):
			diffs = append(diffs, fmt.Sprintf("%s = %s, Etsy %s", name, g, w))
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok && !strings.HasPrefix(name, "stats.statsd.server.") {
			diffs = append(diffs, fmt.Sprintf("extra %s %s", name, g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("flush after step %d differs from Etsy's (%d names there):\n%s", step, len(want), strings.Join(diffs, "\n"))
	}
	if len(want) < 10 {
		t.Errorf("flush after step %d: Etsy wrote only %d names", step, len(want))
	}
}
