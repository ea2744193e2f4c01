package statsd

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// Etsy's backend sends graphiteStats.last_flush from its first flush on:
// the start-up time first (backends/graphite.js init sets it to
// startup_time), then the end of the previous flush.
func TestGraphiteLastFlush(t *testing.T) {
	sink := newGraphiteSink(t)
	before := jsRoundSeconds(time.Now())
	g, err := NewGraphite(GraphiteConfig{Address: sink.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	after := jsRoundSeconds(time.Now())
	lastFlush := func() int64 {
		t.Helper()
		got, _ := sink.next(t, "graphite")
		v, err := strconv.ParseInt(got["stats.statsd.graphiteStats.last_flush"], 10, 64)
		if err != nil {
			t.Fatalf("last_flush %q: %v", got["stats.statsd.graphiteStats.last_flush"], err)
		}
		return v
	}
	s := &Snapshot{Time: time.Now(), Timestamp: after}
	if err := g.Flush(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if v := lastFlush(); v < before || v > after {
		t.Fatalf("first flush: last_flush %d, want the start-up time, in [%d, %d]", v, before, after)
	}
	start := jsRoundSeconds(time.Now())
	if err := g.Flush(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	lastFlush()
	if v, end := lastFlush(), jsRoundSeconds(time.Now()); v < start || v > end {
		t.Fatalf("third flush: last_flush %d, want the second flush's end, in [%d, %d]", v, start, end)
	}
}

// TestGraphiteCarbonTags: tags are written as carbon accepts them: a
// bare tag as flag=true, no tag with an empty name or value (neither
// from DogStatsD tags nor in a Graphite-style name), no character
// carbon refuses.
func TestGraphiteCarbonTags(t *testing.T) {
	g, err := NewGraphite(GraphiteConfig{Address: "127.0.0.1:2003"})
	if err != nil {
		t.Fatal(err)
	}
	var p Parser
	p.NoSanitize = true
	a := mustAggregator(t, AggregatorConfig{})
	for _, l := range []string{"a:1|g|#flag", "b:2|g|#env:", "c:3|g|#env:prod,:x,flag", "d;env=;k=v;=z;;x!^=~y:4|g"} {
		ms, _, _ := p.AppendLine(nil, []byte(l))
		for i := range ms {
			a.Add(&ms[i])
		}
	}
	got := parseGraphite(t, string(g.Append(nil, a.Flush(time.Unix(1700000000, 0)))))
	for name, want := range map[string]string{
		"stats.gauges.a;flag=true":          "1",
		"stats.gauges.b":                    "2",
		"stats.gauges.c;env=prod;flag=true": "3",
		"stats.gauges.d;k=v;x__=_y":         "4",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q; got %v", name, got[name], want, got)
		}
	}
}

// Etsy's backend starts graphiteStats.last_exception at 0
// (backends/graphite.js init: "graphiteStats.last_exception = 0"), not at
// the start-up time as it does last_flush: so do we.
func TestGraphiteLastExceptionStartsAtZero(t *testing.T) {
	sink := newGraphiteSink(t)
	g, err := NewGraphite(GraphiteConfig{Address: sink.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(context.Background(), &Snapshot{Time: time.Now(), Timestamp: 1700000000}); err != nil {
		t.Fatal(err)
	}
	got, _ := sink.next(t, "graphite")
	if v := got["stats.statsd.graphiteStats.last_exception"]; v != "0" {
		t.Errorf("first flush: last_exception = %q, want 0, as Etsy's", v)
	}
}
