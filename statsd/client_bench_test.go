package statsd

import (
	"testing"
	"time"
)

// The client benchmarks send to a UDP socket on 127.0.0.1 that nobody
// reads: the kernel takes each datagram and drops it at the full socket,
// as with a server that cannot keep up. Lines the client could not queue
// are reported as dropped%: the caller's cost excludes the network, the
// sender goroutine's does not.

func benchClient(b *testing.B, cfg ClientConfig) *Client {
	cfg.Addr = clientUDP(b).LocalAddr().String()
	return newTestClient(b, cfg)
}

func reportClientDrops(b *testing.B, c *Client) {
	b.StopTimer()
	c.Close()
	st := c.Stats()
	if total := st.Lines + st.Dropped; total > 0 {
		b.ReportMetric(100*float64(st.Dropped)/float64(total), "dropped%")
	}
}

func BenchmarkClientIncr(b *testing.B) {
	c := benchClient(b, ClientConfig{})
	b.ReportAllocs()
	for b.Loop() {
		c.Incr("requests")
	}
	reportClientDrops(b, c)
}

// BenchmarkClientIncrLines: every increment its own line, as for a
// counter beyond CounterKeys.
func BenchmarkClientIncrLines(b *testing.B) {
	c := benchClient(b, ClientConfig{CounterKeys: -1})
	b.ReportAllocs()
	for b.Loop() {
		c.Incr("requests")
	}
	reportClientDrops(b, c)
}

func BenchmarkClientIncrTags(b *testing.B) {
	c := benchClient(b, ClientConfig{Tags: []string{"env:bench"}})
	b.ReportAllocs()
	for b.Loop() {
		c.Incr("requests", "route:/api", "code:200")
	}
	reportClientDrops(b, c)
}

func BenchmarkClientTiming(b *testing.B) {
	c := benchClient(b, ClientConfig{})
	b.ReportAllocs()
	for b.Loop() {
		c.Timing("latency", 1234567*time.Nanosecond)
	}
	reportClientDrops(b, c)
}

func BenchmarkClientGauge(b *testing.B) {
	c := benchClient(b, ClientConfig{})
	b.ReportAllocs()
	for b.Loop() {
		c.Gauge("queue", 17.25)
	}
	reportClientDrops(b, c)
}

func BenchmarkClientSampledIncr(b *testing.B) {
	c := benchClient(b, ClientConfig{})
	s := c.Sampled(0.1)
	b.ReportAllocs()
	for b.Loop() {
		s.Incr("requests")
	}
	reportClientDrops(b, c)
}

// BenchmarkClientIncrParallel: every P increments the same counter, the
// worst case for the shard locks.
func BenchmarkClientIncrParallel(b *testing.B) {
	c := benchClient(b, ClientConfig{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Incr("requests")
		}
	})
	reportClientDrops(b, c)
}

// BenchmarkClientIncrParallelNames: each P increments its own counters,
// which spread over the shards.
func BenchmarkClientIncrParallelNames(b *testing.B) {
	c := benchClient(b, ClientConfig{})
	names := []string{"a.requests", "b.requests", "c.requests", "d.requests", "e.requests", "f.requests", "g.requests", "h.requests"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			c.Incr(names[i%len(names)])
		}
	})
	reportClientDrops(b, c)
}
