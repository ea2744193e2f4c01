package multicast

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// TestNackFlood: issue 14's NACK amplification over real sockets. While
// a 20,000 messages/s feed runs for a second to two subscribers losing
// 1% of its datagrams, an attacker who has read one datagram sends
// 10,000 forged NACKs (10,000/s, each for about four datagrams of the
// window) to the publisher. Its budget for the attacker's address drops
// most of them and bounds the repairs the rest cause; the subscribers'
// p99 latency stays within twice that of the same feed without the
// flood, in at least one of three rounds, each an unattacked run and an
// attacked one back to back.
//
// The latency verdict fails only when every attacked run is more than
// twice as slow as the unattacked run just before it: a defence that
// stops working slows every attacked run (the flood made the
// publisher send 570 MB of repairs), while on a 2-core machine shared
// with other work a single run's p99 can grow several times over for
// reasons of its own, in either kind of run.
//
// TestSimNackFlood sends the 100,000 NACKs, in virtual time.
// Here the rate is what the flood caused (570 MB of repairs at
// the publisher's 64 MiB/s rate limit: about nine seconds, so about
// 11,000 NACKs/s): a much faster flood costs this 2-core machine more to
// send and receive, even dropped unread, than any answer to it would.
func TestNackFlood(t *testing.T) {
	rounds := 3
	if raceEnabled {
		rounds = 1 // latency under the race detector says nothing
	}
	best := math.Inf(1) // the smallest ratio of attacked to unattacked p99
	for range rounds {
		base, _ := floodRound(t, 0)
		flood, st := floodRound(t, 10_000)
		best = min(best, float64(flood)/float64(base))
		// What a new source starts with (its share of the window, at
		// least 256 KiB), its share of the new data, and 256 KiB/s over
		// the (at most three) seconds of a round.
		bound := 256<<10 + uint64(2*reliable.DefaultSourceRepairShare*float64(st.Bytes)) + 3*reliable.DefaultSourceRepairRate
		t.Logf("p99 %v without, %v with the flood; %d repairs, %d bytes (bound %d), %d NCFs; %d NACKs and %d repairs over budget",
			base, flood, st.Repairs, st.RepairBytes, bound, st.Ncfs, st.NacksOverBudget, st.RepairsOverBudget)
		if st.NacksOverBudget == 0 || st.RepairBytes > bound {
			t.Fatalf("budget not applied: %+v", st.SenderStats)
		}
	}
	if raceEnabled {
		return
	}
	if best > 2 {
		t.Errorf("p99 under the flood more than 2× that without it in every round (at best %.2f×)", best)
	}
}

// floodRound runs the feed for a second, with nacks forged NACKs sent
// meanwhile at 10,000 per second, and returns the subscribers' p99 latency and the
// publisher's stats.
func floodRound(t *testing.T, nacks int) (time.Duration, PublisherStats) {
	cfg := testConfig(t)
	var subs []*Subscriber
	for i := range 2 {
		scfg := cfg
		scfg.Faults.Loss, scfg.Faults.Seed = 0.01, int64(i+1)
		subs = append(subs, mustSub(t, scfg))
	}
	p := mustPub(t, cfg)
	const n, rate, nackRate = 20_000, 20_000, 10_000
	hists := make([]*latency.Histogram, len(subs))
	done := make(chan error, len(subs))
	for i, s := range subs {
		hists[i] = latency.New()
		go func() { done <- receiveLatencies(s, n, hists[i]) }()
	}
	stop := make(chan struct{})
	attacked := make(chan struct{})
	go func() {
		defer close(attacked)
		if nacks > 0 {
			forgeNacks(t, p, nacks, nackRate, stop)
		}
	}()
	publishAt(t, p, 0, n, 64, rate)
	for range subs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-attacked
	all := latency.New()
	for _, h := range hists {
		all.Merge(h)
	}
	return all.Quantile(0.99), p.Stats()
}

// receiveLatencies records the latency of n messages (a gap counts its
// messages without latencies).
func receiveLatencies(s *Subscriber, n int, h *latency.Histogram) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < n; {
		ev, err := s.Receive(ctx)
		if err != nil {
			return err
		}
		switch ev.Kind {
		case transport.EventMessage:
			h.Record(time.Since(ev.Message.Time))
			got++
		case transport.EventGap:
			got += int(ev.Gap.Len())
		}
	}
	return nil
}

// forgeNacks sends n NACKs for p's stream to its address, at about rate
// per second, each for 64 sequence numbers (four datagrams of 16
// messages) at random in what has been sent, until done or stop.
func forgeNacks(t *testing.T, p *Publisher, n, rate int, stop <-chan struct{}) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	to := net.UDPAddrFromAddrPort(p.LocalAddr())
	id := p.Stream()
	r := rand.New(rand.NewPCG(1, 2))
	var b []byte
	start := time.Now()
	for i := 0; i < n; i++ {
		if i%100 == 0 {
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		}
		next := p.Stats().Frames
		if next < 65 {
			continue
		}
		from := 1 + r.Uint64N(next-64)
		b = reliable.AppendRanges(b[:0], reliable.TypeNack, id, []reliable.Range{{From: from, To: from + 63}})
		_, _ = c.WriteTo(b, to)
	}
}
