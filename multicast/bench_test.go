package multicast

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/transport"
)

// The benchmarks below compare the transport with raw UDP multicast on
// the same loopback interface, in the same run, and report ratios:
//
//	go test -run XXX -bench Rate -benchtime 400000x ./multicast/
//	go test -run XXX -bench Latency -benchtime 20000x ./multicast/
//	go test -run XXX -bench Transport -benchtime 2000000x ./multicast/
//
// b.N is the number of 64-byte messages.

const (
	benchPayload = 64
	benchRounds  = 7
)

// BenchmarkRate reports messages per second through raw UDP (one
// message per datagram, sendmmsg/recvmmsg batches), through the
// transport, and through the transport with 1% of datagrams lost (and
// repaired). Each of benchRounds rounds measures the three one after the
// other; the medians and their ratios are reported, so that a noisy
// moment on a shared machine skews one round rather than the figures.
func BenchmarkRate(b *testing.B) {
	var raw, clean, lossy []float64
	for range benchRounds {
		raw = append(raw, rawUDPRate(b, b.N))
		clean = append(clean, transportRate(b, b.N, 0))
		lossy = append(lossy, transportRate(b, b.N, 0.01))
	}
	r, c, l := median(raw), median(clean), median(lossy)
	b.ReportMetric(r, "raw-msgs/s")
	b.ReportMetric(c, "msgs/s")
	b.ReportMetric(l, "loss1%-msgs/s")
	b.ReportMetric(c/r, "x-raw")
	b.ReportMetric(l/c, "loss1%/clean")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTransport64B is the transport alone, publisher to subscriber:
// time and allocations per message.
func BenchmarkTransport64B(b *testing.B) {
	b.ReportAllocs()
	b.ReportMetric(transportRate(b, b.N, 0), "msgs/s")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// transportRate publishes n messages as fast as Publish takes them and
// returns the rate at which the subscriber delivered them.
func transportRate(b *testing.B, n int, loss float64) float64 {
	cfg := testConfig(b)
	scfg := cfg
	scfg.Faults.Loss, scfg.Faults.Seed = loss, 1
	s := mustSub(b, scfg)
	p := mustPub(b, cfg)
	payload := make([]byte, benchPayload)
	ctx := context.Background()
	start := time.Now()
	go func() {
		for i := 0; i < n; i++ {
			if err := p.Publish(ctx, transport.Message{Payload: payload}); err != nil {
				b.Error(err)
				return
			}
		}
		_ = p.Flush(ctx)
	}()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for got := 0; got < n; {
		ev, err := s.Receive(rctx)
		if err != nil {
			b.Fatalf("after %d messages: %v", got, err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			got++
		case transport.EventGap:
			b.Fatalf("%v (stats %+v)", ev.Gap, s.Stats())
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// rawUDPRate sends n 64-byte datagrams to a multicast group on lo in
// batches and returns the rate at which a batch-reading receiver got
// them (the receiver stops when the sender is done and nothing more
// comes).
func rawUDPRate(b *testing.B, n int) float64 {
	cfg, rc, sc := rawPair(b)
	bufferSizes(rc, cfg.RecvBuffer, 0, cfg.Logger)
	bufferSizes(sc, 0, cfg.SendBuffer, cfg.Logger)

	const batch = 32
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		w := ipv4.NewPacketConn(sc)
		msgs := make([]ipv4.Message, batch)
		group := net.UDPAddrFromAddrPort(cfg.Group)
		for i := range msgs {
			msgs[i] = ipv4.Message{Buffers: [][]byte{make([]byte, benchPayload)}, Addr: group}
		}
		for sent := 0; sent < n; {
			k, err := w.WriteBatch(msgs[:min(batch, n-sent)], 0)
			if err != nil {
				b.Error(err)
				return
			}
			sent += k
		}
	}()
	r := ipv4.NewPacketConn(rc)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	got := 0
	last := time.Now()
	for got < n {
		_ = rc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		k, err := r.ReadBatch(msgs, 0)
		if err != nil {
			break // the sender is done and the rest was dropped
		}
		got += k
		last = time.Now()
	}
	wg.Wait()
	return float64(got) / last.Sub(start).Seconds()
}

// rawPair opens a plain UDP receiver joined to a fresh group on lo and a
// sender to it, set up as the transport's sockets are; cleanup closes
// them.
func rawPair(b *testing.B) (cfg Config, rc, sc *net.UDPConn) {
	cfg = testConfig(b)
	rc = rawReceiver(b, cfg)
	ifi, addr, err := cfg.prepare()
	if err != nil {
		b.Fatal(err)
	}
	if sc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0))); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sc.Close() })
	if err := setupSender(sc, ifi, &cfg); err != nil {
		b.Fatal(err)
	}
	return cfg, rc, sc
}

// rawReceiver opens a plain UDP socket joined to cfg.Group on lo;
// cleanup closes it.
func rawReceiver(b testing.TB, cfg Config) *net.UDPConn {
	ifi, _, err := cfg.prepare()
	if err != nil {
		b.Fatal(err)
	}
	rc, err := listenUDP(context.Background(), cfg.Group, true)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rc.Close() })
	if err := join(rc, ifi, cfg.Group.Addr()); err != nil {
		b.Fatal(err)
	}
	return rc
}
