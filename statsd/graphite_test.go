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
