package multicast

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// The benchmarks below compare the transport with raw UDP multicast on
// the same loopback interface, in the same run, in interleaved rounds,
// and report ratios:
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

// benchKey is the shared key of the authenticated runs.
var benchKey = []byte("0123456789abcdef0123456789abcdef")

// BenchmarkRate reports how fast the transport delivers 64-byte
// messages, published as fast as Publish takes them, against the
// physical limit of this machine: raw UDP multicast datagrams of the
// transport's own average datagram size, sent and received in batches
// (sendmmsg/recvmmsg) with no protocol at all. Each round measures, one
// after the other:
//
//   - raw-64: raw datagrams of one 64-byte message each, the naive
//     baseline (what sending each message in its own datagram costs);
//   - the transport, without and with a key (authentication tags), and
//     with 1% of datagrams lost (and repaired);
//   - raw-same-size: as many raw datagrams as the transport sent, of its
//     average size (the bytes of its datagrams / their number).
//
// Reported, as medians of benchRounds rounds (each round is also logged):
//
//   - msgs/s, key-msgs/s, loss1%-msgs/s: delivered messages per second;
//   - x-limit: msgs/s over the limit, raw-same-size datagrams/s × the
//     transport's messages per datagram: the fraction of what the wire
//     allows at that datagram size that the protocol delivers;
//   - payload-x-limit: payload bytes delivered per second over the raw
//     same-size bytes per second: x-limit less the headers' share;
//   - key/plain and loss1%/clean: the costs of authentication and of 1%
//     loss;
//   - batching-gain: msgs/s over raw-64's datagrams/s. It measures the
//     packing of messages into datagrams, not the protocol: raw
//     datagrams packed the same way go further (x-limit says how far);
//   - rounds-with-gaps: rounds in which a subscriber, outrun by a
//     publisher going as fast as a busy machine allows, fell more than a
//     retransmit window behind and reported messages lost (each logged).
func BenchmarkRate(b *testing.B) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	var raw64, rawSame, plain, keyed, lossy, xLimit, xPayload []float64
	gapRounds := 0
	for round := range benchRounds {
		var p, k rateResult
		if round%2 == 0 { // neither goes first every time
			p, k = transportRate(b, b.N, 0, nil), transportRate(b, b.N, 0, benchKey)
		} else {
			k, p = transportRate(b, b.N, 0, benchKey), transportRate(b, b.N, 0, nil)
		}
		size := int(p.bytes / p.datagrams)
		rs := rawUDPRate(b, int(p.datagrams), size)
		l := transportRate(b, b.N, 0.01, nil)
		r64 := rawUDPRate(b, b.N, benchPayload)
		perDatagram := float64(b.N) / float64(p.datagrams)
		raw64, rawSame = append(raw64, r64), append(rawSame, rs)
		plain, keyed, lossy = append(plain, p.msgs), append(keyed, k.msgs), append(lossy, l.msgs)
		xLimit = append(xLimit, p.msgs/(rs*perDatagram))
		xPayload = append(xPayload, p.msgs*benchPayload/(rs*float64(size)))
		b.Logf("round %d: raw-64 %.0f dgrams/s; raw-%dB %.0f dgrams/s; transport %.0f msgs/s (%.1f per datagram, x-limit %.2f), with key %.0f (%.2f), 1%% loss %.0f (%.2f); batching gain %.1f",
			round+1, r64, size, rs, p.msgs, perDatagram, xLimit[round], k.msgs, k.msgs/p.msgs, l.msgs, l.msgs/p.msgs, p.msgs/r64)
		if lost := p.lost + k.lost + l.lost; lost > 0 {
			gapRounds++
			b.Logf("round %d: the subscriber fell more than a window behind and reported %d, %d and %d messages lost", round+1, p.lost, k.lost, l.lost)
		}
	}
	b.ReportMetric(median(plain), "msgs/s")
	b.ReportMetric(median(keyed), "key-msgs/s")
	b.ReportMetric(median(lossy), "loss1%-msgs/s")
	b.ReportMetric(median(rawSame), "raw-same-size-dgrams/s")
	b.ReportMetric(median(xLimit), "x-limit")
	b.ReportMetric(median(xPayload), "payload-x-limit")
	b.ReportMetric(medianRatio(keyed, plain), "key/plain")
	b.ReportMetric(medianRatio(lossy, plain), "loss1%/clean")
	b.ReportMetric(median(raw64), "raw-64-dgrams/s")
	b.ReportMetric(medianRatio(plain, raw64), "batching-gain")
	b.ReportMetric(float64(gapRounds), "rounds-with-gaps")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkKeyCost is the throughput cost of authentication alone: the
// transport with and without a key, in costPairs pairs of runs of b.N
// messages that alternate which goes first, so that each pair compares
// like moments of a shared machine. It reports the median and the
// quartiles of the per-pair ratios key/plain.
//
//	go test -run XXX -bench KeyCost -benchtime 200000x ./multicast/
func BenchmarkKeyCost(b *testing.B) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	pairedCost(b, "key", "plain",
		func() rateResult { return transportRate(b, b.N, 0, benchKey) },
		func() rateResult { return transportRate(b, b.N, 0, nil) })
}

// BenchmarkTransport64B is the transport alone, publisher to subscriber:
// time and allocations per message.
func BenchmarkTransport64B(b *testing.B) {
	b.ReportAllocs()
	b.ReportMetric(transportRate(b, b.N, 0, nil).msgs, "msgs/s")
}

// BenchmarkTransport64BReceipts is BenchmarkTransport64B with every
// message published with PublishReceipt (one done function for all):
// time and allocations per message with receipts.
func BenchmarkTransport64BReceipts(b *testing.B) {
	b.ReportAllocs()
	b.ReportMetric(transportRateReceipts(b, b.N, 0, nil, true).msgs, "msgs/s")
}

// BenchmarkReceiptCost is the throughput cost of publish receipts: the
// transport with Publish and with PublishReceipt, in costPairs pairs
// of runs of b.N messages that alternate which goes first. It reports
// the median and quartiles of the per-pair ratios receipts/plain.
//
//	go test -run XXX -bench ReceiptCost -benchtime 200000x ./multicast/
func BenchmarkReceiptCost(b *testing.B) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	pairedCost(b, "receipts", "plain",
		func() rateResult { return transportRateReceipts(b, b.N, 0, nil, true) },
		func() rateResult { return transportRate(b, b.N, 0, nil) })
}

// BenchmarkFlowCost is the throughput cost of flow control when no
// subscriber is slow: the transport without flow control and with
// Flow.Mode min (the publisher checking the slowest subscriber's STATUS
// before each message), one subscriber, in costPairs pairs of runs of
// b.N messages that alternate which goes first. It reports the median
// and quartiles of the per-pair ratios flow/none, and the messages each
// side lost (published as fast as Publish takes them, a publisher
// without flow control can outpace its subscriber on a busy machine).
//
//	go test -run XXX -bench FlowCost -benchtime 200000x ./multicast/
func BenchmarkFlowCost(b *testing.B) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	run := func(mode reliable.FlowMode) rateResult {
		cfg := testConfig(b)
		cfg.Sender.Flow.Mode = mode
		if mode != reliable.FlowNone {
			cfg.Sender.Flow.MinReceivers = 1 // see limitOurs
		}
		return transportRateConfig(b, b.N, cfg, cfg, rateOpts{})
	}
	flow, none := pairedCost(b, "flow", "none",
		func() rateResult { return run(reliable.FlowMin) },
		func() rateResult { return run(reliable.FlowNone) })
	var lostNone, lostFlow, held uint64
	for i := range flow {
		lostNone, lostFlow, held = lostNone+none[i].lost, lostFlow+flow[i].lost, held+flow[i].held
	}
	b.ReportMetric(float64(lostNone), "lost-none")
	b.ReportMetric(float64(lostFlow), "lost-flow")
	b.ReportMetric(float64(held)/float64(len(flow)), "held/run")
}

// costPairs is how many pairs of runs pairedCost measures.
const costPairs = 21

// pairedCost measures the cost of a variant of the transport against
// its base: costPairs pairs of runs that alternate which goes first, so
// that each pair compares like moments of a shared machine. It reports
// both medians (msgs/s of the base, NAME-msgs/s of the variant) and the
// median and quartiles of the per-pair ratios NAME/BASE, logs each
// pair's ratio, and returns every run of both.
func pairedCost(b *testing.B, name, base string, variant, plain func() rateResult) (vs, ps []rateResult) {
	var ratios, pm, vm []float64
	for i := range costPairs {
		var p, v rateResult
		if i%2 == 0 {
			p, v = plain(), variant()
		} else {
			v, p = variant(), plain()
		}
		ps, vs = append(ps, p), append(vs, v)
		pm, vm = append(pm, p.msgs), append(vm, v.msgs)
		ratios = append(ratios, v.msgs/p.msgs)
	}
	s := slices.Clone(ratios)
	slices.Sort(s)
	ratio := name + "/" + base
	b.Logf("%s per pair: %.2f", ratio, ratios)
	b.ReportMetric(median(pm), "msgs/s")
	b.ReportMetric(median(vm), name+"-msgs/s")
	b.ReportMetric(s[len(s)/4], ratio+"-q1")
	b.ReportMetric(median(ratios), ratio)
	b.ReportMetric(s[3*len(s)/4], ratio+"-q3")
	b.ReportMetric(0, "ns/op")
	return vs, ps
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// reportSpread reports the median of the rounds' values v as unit, and
// their least and greatest as unit-min and unit-max.
func reportSpread(b *testing.B, v []float64, unit string) {
	b.ReportMetric(median(v), unit)
	b.ReportMetric(slices.Min(v), unit+"-min")
	b.ReportMetric(slices.Max(v), unit+"-max")
}

// medianRatio is the median of the per-round ratios a[i]/b[i]: the
// rounds are interleaved, so each ratio compares like moments.
func medianRatio(a, b []float64) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return median(r)
}

// rateResult is what one transport run measured.
type rateResult struct {
	msgs      float64 // messages delivered per second
	datagrams uint64  // original DATA datagrams the publisher sent
	bytes     uint64  // their bytes
	lost      uint64  // messages reported in gaps
	held      uint64  // Publish calls flow control held
	recvBuf   int     // the subscriber's SO_RCVBUF granted, bytes
	gso, gro  bool    // the publisher sent with GSO, the subscriber read with GRO
}

// transportRate publishes n messages as fast as Publish takes them and
// returns the rate at which the subscriber delivered them, with the
// publisher's datagram counts. Publishing as fast as the machine allows
// can leave the subscriber more than a retransmit window behind, on a
// busy machine; what it then reports lost is counted, not hidden.
func transportRate(b *testing.B, n int, loss float64, key []byte) rateResult {
	return transportRateReceipts(b, n, loss, key, false)
}

// transportRateReceipts is transportRate, publishing with PublishReceipt
// when receipts is set; it then also waits for every receipt.
func transportRateReceipts(b *testing.B, n int, loss float64, key []byte, receipts bool) rateResult {
	cfg := testConfig(b)
	cfg.Key = key
	return transportRateConfig(b, n, cfg, withFaults(cfg, faultnet.Faults{Loss: loss, Seed: 1}), rateOpts{receipts: receipts})
}

// rateOpts are how transportRateConfig publishes and receives: with
// receipts (PublishReceipt), with pubBatch > 0 in PublishBatch calls of
// that many messages (no receipts), with recvBatch read with
// ReceiveBatch (up to 1024 events a call) instead of Receive.
type rateOpts struct {
	receipts, recvBatch bool
	pubBatch            int
}

// transportRateConfig is transportRateReceipts with the publisher's and
// the subscriber's Config, published and read as o says.
func transportRateConfig(b *testing.B, n int, cfg, scfg Config, o rateOpts) rateResult {
	s := mustSub(b, scfg)
	p := mustPub(b, cfg)
	payload := make([]byte, benchPayload)
	ctx := context.Background()
	var receipted atomic.Int64
	allReceipted := make(chan struct{})
	done := func(_ transport.Receipt, err error) {
		if err != nil {
			b.Error(err)
		}
		if receipted.Add(1) == int64(n) {
			close(allReceipted)
		}
	}
	start := time.Now()
	go func() {
		if o.pubBatch > 0 {
			publishBatches(b, p, n, o.pubBatch, payload)
			return
		}
		for i := 0; i < n; i++ {
			var err error
			if o.receipts {
				err = p.PublishReceipt(ctx, transport.Message{Payload: payload}, done)
			} else {
				err = p.Publish(ctx, transport.Message{Payload: payload})
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
		_ = p.Flush(ctx)
	}()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var got, lost uint64
	count := func(ev *transport.Event) {
		switch ev.Kind {
		case transport.EventMessage:
			got++
		case transport.EventGap:
			lost += ev.Gap.Len()
		}
	}
	for got+lost < uint64(n) {
		if o.recvBatch {
			evs, err := s.ReceiveBatch(rctx, 1024)
			if err != nil {
				b.Fatalf("after %d messages: %v", got, err)
			}
			for i := range evs {
				count(&evs[i])
			}
			continue
		}
		ev, err := s.Receive(rctx)
		if err != nil {
			b.Fatalf("after %d messages: %v", got, err)
		}
		count(&ev)
	}
	rate := float64(got) / time.Since(start).Seconds()
	if o.receipts {
		select {
		case <-allReceipted:
		case <-rctx.Done():
			b.Fatalf("%d receipts of %d", receipted.Load(), n)
		}
	}
	_ = p.Flush(ctx)
	st := p.Stats()
	ss := s.Stats()
	return rateResult{msgs: rate, datagrams: st.Datagrams, bytes: st.Bytes, lost: lost, held: st.FlowHeld, recvBuf: ss.RecvBuffer, gso: st.GSORuns > 0, gro: ss.GROReads > 0}
}

// publishBatches publishes n copies of payload in PublishBatch calls of
// size messages, then flushes.
func publishBatches(b *testing.B, p *Publisher, n, size int, payload []byte) {
	ctx := context.Background()
	ms := make([]transport.Message, size)
	for i := range ms {
		ms[i].Payload = payload
	}
	for sent := 0; sent < n; {
		k := min(size, n-sent)
		if _, err := p.PublishBatch(ctx, ms[:k]); err != nil {
			b.Error(err)
			return
		}
		sent += k
	}
	_ = p.Flush(ctx)
}

// rawUDPRate sends n datagrams of size bytes to a multicast group on lo
// in batches and returns the rate at which a batch-reading receiver got
// them.
func rawUDPRate(b *testing.B, n, size int) float64 { return rawUDP(b, n, size).rate }

// rawResult is what one raw run measured.
type rawResult struct {
	rate       float64 // datagrams received per second
	got        int     // datagrams received
	recvBuffer int     // SO_RCVBUF granted, bytes (as SubscriberStats.RecvBuffer)
}

// rawUDP sends n datagrams of size bytes to a multicast group on lo in
// batches (sendmmsg) to a batch-reading receiver (recvmmsg), both
// sockets set up and sized as the transport's are. The clock runs from
// the start of sending to the last datagram received; the receiver
// waits as long as it takes for the first, and stops once it has all n
// or nothing more came for 50 ms (the rest was dropped: got < n).
func rawUDP(b *testing.B, n, size int) rawResult {
	cfg, rc, sc := rawPair(b)
	var res rawResult
	res.recvBuffer, _ = bufferSizes(rc, cfg.RecvBuffer, 0, cfg.Logger)
	bufferSizes(sc, 0, cfg.SendBuffer, cfg.Logger)

	batch := cfg.Batch
	// Both sides' buffers are made before the clock starts, as the
	// transport's are made by NewPublisher and NewSubscriber.
	w := ipv4.NewPacketConn(sc)
	msgs := make([]ipv4.Message, batch)
	group := net.UDPAddrFromAddrPort(cfg.Group)
	for i := range msgs {
		msgs[i] = ipv4.Message{Buffers: [][]byte{make([]byte, size)}, Addr: group}
	}
	r, err := newReadBatch(rc, batch, maxDatagram, false)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		for sent := 0; sent < n; {
			k, err := w.WriteBatch(msgs[:min(batch, n-sent)], 0)
			if err != nil {
				b.Error(err)
				return
			}
			sent += k
		}
	}()
	last := time.Now()
	_ = rc.SetReadDeadline(time.Now().Add(time.Minute))
	for res.got < n {
		k, err := r.read()
		if err != nil {
			break // the sender is done and the rest was dropped
		}
		res.got += k
		last = time.Now()
		_ = rc.SetReadDeadline(last.Add(50 * time.Millisecond))
	}
	wg.Wait()
	res.rate = float64(res.got) / last.Sub(start).Seconds()
	return res
}

// rawUDPOffload is rawUDP with the kernel's UDP offloads, as the
// transport uses them where they work: the sender hands runs of up to
// gsoMaxSegments datagrams to sendmmsg as one GSO entry each, the
// receiver reads them merged (GRO) and counts the datagrams in each.
func rawUDPOffload(b *testing.B, n, size int) rawResult {
	cfg, rc, sc := rawPair(b)
	var res rawResult
	res.recvBuffer, _ = bufferSizes(rc, cfg.RecvBuffer, 0, cfg.Logger)
	bufferSizes(sc, 0, cfg.SendBuffer, cfg.Logger)
	if !enableGRO(rc) || !gsoAvailable() {
		b.Skip("no UDP GSO or GRO here")
	}
	segs := min(gsoMaxSegments, gsoMaxBytes/size)
	batch := cfg.Batch
	w := ipv4.NewPacketConn(sc) // buffers made before the clock starts, as in rawUDP
	group := net.UDPAddrFromAddrPort(cfg.Group)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		bufs := make([][]byte, segs)
		for j := range bufs {
			bufs[j] = make([]byte, size)
		}
		msgs[i] = ipv4.Message{Buffers: bufs, Addr: group, OOB: segmentCmsg(size)}
	}
	rb, err := newReadBatch(rc, batch, maxDatagram, true)
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		for sent := 0; sent < n; {
			k := 0
			for left := n - sent; k < batch && left > 0; k++ {
				c := min(segs, left)
				msgs[k].Buffers = msgs[k].Buffers[:c]
				left -= c
			}
			m, err := w.WriteBatch(msgs[:k], 0)
			if err != nil {
				b.Error(err)
				return
			}
			for i := range msgs[:m] {
				sent += len(msgs[i].Buffers)
			}
		}
	}()
	last := time.Now()
	_ = rc.SetReadDeadline(time.Now().Add(time.Minute))
	count := func([]byte, netip.AddrPort) { res.got++ }
	for res.got < n {
		if _, err := rb.read(); err != nil {
			break // the sender is done and the rest was dropped
		}
		rb.handle(count, nil)
		last = time.Now()
		_ = rc.SetReadDeadline(last.Add(50 * time.Millisecond))
	}
	wg.Wait()
	res.rate = float64(res.got) / last.Sub(start).Seconds()
	return res
}

// rawPair opens a plain UDP receiver joined to a fresh group on lo and a
// sender to it, set up as the transport's sockets are; cleanup closes
// them.
func rawPair(b *testing.B) (cfg Config, rc, sc *net.UDPConn) {
	cfg = testConfig(b)
	cfg.setDefaults() // the transport's buffer sizes and batch
	return cfg, rawReceiver(b, cfg), rawSender(b, cfg)
}

// rawSender opens a plain UDP socket that sends to cfg.Group on lo, set
// up as the publisher's is; cleanup closes it.
func rawSender(tb testing.TB, cfg Config) *net.UDPConn {
	ifi, addr, err := cfg.prepare()
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sc.Close() })
	if err := setupSender(sc, ifi, &cfg); err != nil {
		tb.Fatal(err)
	}
	return sc
}

// rawReceiver opens a plain UDP socket joined to cfg.Group on lo;
// cleanup closes it.
func rawReceiver(b testing.TB, cfg Config) *net.UDPConn {
	ifi, _, err := cfg.prepare()
	if err != nil {
		b.Fatal(err)
	}
	rc, err := listenUDP(context.Background(), cfg.Group, reuseAddr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rc.Close() })
	if err := join(rc, ifi, cfg.Group.Addr()); err != nil {
		b.Fatal(err)
	}
	return rc
}
