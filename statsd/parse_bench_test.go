package statsd

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"
)

// benchPacket is a datagram of 20 counter lines over 100 keys, as the
// ingest benchmark sends.
func benchPacket(tags bool) []byte {
	var pkt []byte
	for l := 0; l < benchLinesPerDatagram; l++ {
		pkt = fmt.Appendf(pkt, "bench.k%02d:1|c", l%benchKeys)
		if tags {
			pkt = append(pkt, "|#env:prod,host:web-1"...)
		}
		pkt = append(pkt, '\n')
	}
	return pkt
}

// BenchmarkParseLine: one line through the parser.
func BenchmarkParseLine(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"counter", "api.requests:1|c"},
		{"timer-rate", "api.latency:12.5|ms|@0.1"},
		{"tags", "api.requests:1|c|#env:prod,region:eu,host:web-1"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var p Parser
			ms := make([]Metric, 0, 8)
			line := []byte(tc.line)
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				p.Reset()
				ms, _, _ = p.AppendLine(ms[:0], line)
			}
		})
	}
}

// BenchmarkAggregatePacket: one 20-line datagram parsed and aggregated,
// as a UDP reader does it; lines/s is the aggregation rate of one core.
func BenchmarkAggregatePacket(b *testing.B) {
	for _, tags := range []bool{false, true} {
		b.Run(fmt.Sprintf("tags=%v", tags), func(b *testing.B) {
			a := mustAggregator(b, AggregatorConfig{})
			bt := newBatch(false)
			pkt := benchPacket(tags)
			b.ReportAllocs()
			for b.Loop() {
				bt.addPacket(pkt)
				bt.applyTo(a)
			}
			b.ReportMetric(float64(b.N*benchLinesPerDatagram)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// BenchmarkUDPIngest: 20-line datagrams sent over loopback to a server
// and aggregated, the whole read path (recvmmsg, queue, parse,
// aggregate) and the sender in one process. allocs/op counts every
// allocation of the process per datagram (the runtime's count), so 0
// means the read path allocates nothing per line, and GCs/Mlines counts
// the garbage collections per million lines.
func BenchmarkUDPIngest(b *testing.B) {
	cfg := Config{UDPReaders: 1}
	cfg.FlushInterval = time.Hour
	s := startServer(b, cfg)
	c, err := net.Dial("udp", s.UDPAddrs()[0].String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pkt := benchPacket(false)
	ctx := context.Background()
	// Warm up: the queue's slabs and the aggregator's keys exist.
	for range 4 * udpQueueSlabs {
		if _, err := c.Write(pkt); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WaitReceived(ctx, 4*udpQueueSlabs, 0); err != nil {
		b.Fatal(err)
	}
	p0, _ := s.Received()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ReportAllocs()
	n := uint64(0)
	for b.Loop() {
		if _, err := c.Write(pkt); err != nil {
			b.Fatal(err)
		}
		n++
		// Wait every so often, so the socket's buffer never overflows.
		if n%32 == 0 {
			if err := s.WaitReceived(ctx, p0+n, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.WaitReceived(ctx, p0+n, 0); err != nil {
		b.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.NumGC-m0.NumGC)/float64(n*benchLinesPerDatagram)*1e6, "GCs/Mlines")
	b.ReportMetric(float64(n*benchLinesPerDatagram)/b.Elapsed().Seconds(), "lines/s")
}
