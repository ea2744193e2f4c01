package statsd

import (
	"context"
	"net"
	"testing"
	"time"

	datadog "github.com/DataDog/datadog-go/v5/statsd"
	brokerless "github.com/brokerless/brokerless/statsd"
	cactus "github.com/cactus/go-statsd-client/v5/statsd"
)

// Each client sends to its own UDP socket on 127.0.0.1 that nobody
// reads: the kernel takes every datagram and drops it at the full socket,
// so all three pay the real system calls and none is slowed by a reader.
// Each runs with its defaults, buffered (cactus's buffered client).

func sink(b *testing.B) string {
	b.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn.LocalAddr().String()
}

func newBrokerless(b *testing.B) *brokerless.Client {
	c, err := brokerless.NewClient(context.Background(), brokerless.ClientConfig{Addr: sink(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		// Lines the client could not queue while the benchmark outran
		// the network: the caller never waits, it drops and counts.
		if st := c.Stats(); st.Lines+st.Dropped > 0 {
			b.ReportMetric(100*float64(st.Dropped)/float64(st.Lines+st.Dropped), "dropped%")
		}
	})
	b.ReportAllocs()
	return c
}

func newDatadog(b *testing.B) *datadog.Client {
	c, err := datadog.New(sink(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		// Packets its sender queue had no room for, as dropped% above.
		if t := c.GetTelemetry(); t.TotalPayloadsSent+t.TotalPayloadsDropped > 0 {
			b.ReportMetric(100*float64(t.TotalPayloadsDropped)/float64(t.TotalPayloadsSent+t.TotalPayloadsDropped), "dropped%")
		}
	})
	b.ReportAllocs()
	return c
}

func newCactus(b *testing.B) cactus.Statter {
	c, err := cactus.NewClientWithConfig(&cactus.ClientConfig{Address: sink(b), UseBuffered: true, TagFormat: cactus.SuffixOctothorpe})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	b.ReportAllocs()
	return c
}

const latency = 1234567 * time.Nanosecond

func BenchmarkClientIncr(b *testing.B) {
	b.Run("brokerless", func(b *testing.B) {
		c := newBrokerless(b)
		for b.Loop() {
			c.Incr("http.requests")
		}
	})
	b.Run("datadog", func(b *testing.B) {
		c := newDatadog(b)
		for b.Loop() {
			c.Incr("http.requests", nil, 1)
		}
	})
	b.Run("cactus", func(b *testing.B) {
		c := newCactus(b)
		for b.Loop() {
			c.Inc("http.requests", 1, 1)
		}
	})
}

func BenchmarkClientIncrTags(b *testing.B) {
	b.Run("brokerless", func(b *testing.B) {
		c := newBrokerless(b)
		for b.Loop() {
			c.Incr("http.requests", "route:/api", "code:200")
		}
	})
	b.Run("datadog", func(b *testing.B) {
		c := newDatadog(b)
		for b.Loop() {
			c.Incr("http.requests", []string{"route:/api", "code:200"}, 1)
		}
	})
	b.Run("cactus", func(b *testing.B) {
		c := newCactus(b)
		for b.Loop() {
			c.Inc("http.requests", 1, 1, cactus.Tag{"route", "/api"}, cactus.Tag{"code", "200"})
		}
	})
}

func BenchmarkClientTiming(b *testing.B) {
	b.Run("brokerless", func(b *testing.B) {
		c := newBrokerless(b)
		for b.Loop() {
			c.Timing("http.latency", latency)
		}
	})
	b.Run("datadog", func(b *testing.B) {
		c := newDatadog(b)
		for b.Loop() {
			c.Timing("http.latency", latency, nil, 1)
		}
	})
	b.Run("cactus", func(b *testing.B) {
		c := newCactus(b)
		for b.Loop() {
			c.TimingDuration("http.latency", latency, 1)
		}
	})
}

func BenchmarkClientTimingTags(b *testing.B) {
	b.Run("brokerless", func(b *testing.B) {
		c := newBrokerless(b)
		for b.Loop() {
			c.Timing("http.latency", latency, "route:/api", "code:200")
		}
	})
	b.Run("datadog", func(b *testing.B) {
		c := newDatadog(b)
		for b.Loop() {
			c.Timing("http.latency", latency, []string{"route:/api", "code:200"}, 1)
		}
	})
	b.Run("cactus", func(b *testing.B) {
		c := newCactus(b)
		for b.Loop() {
			c.TimingDuration("http.latency", latency, 1, cactus.Tag{"route", "/api"}, cactus.Tag{"code", "200"})
		}
	})
}

// BenchmarkClientIncrParallel: every P increments the same counter.
func BenchmarkClientIncrParallel(b *testing.B) {
	b.Run("brokerless", func(b *testing.B) {
		c := newBrokerless(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Incr("http.requests")
			}
		})
	})
	b.Run("datadog", func(b *testing.B) {
		c := newDatadog(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Incr("http.requests", nil, 1)
			}
		})
	})
	b.Run("cactus", func(b *testing.B) {
		c := newCactus(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc("http.requests", 1, 1)
			}
		})
	})
}
