package multicast

import (
	"testing"

	"github.com/brokerless/brokerless/reliable"
)

// BenchmarkLimit compares the transport with the physical limit of this
// machine, like for like: b.N 64-byte messages through the transport,
// with flow control (Flow.Mode min) so that every message is delivered,
// then exactly as many raw multicast datagrams, of exactly the
// transport's average datagram size, sent with sendmmsg and read with
// recvmmsg in batches of Config.Batch, on sockets with the same buffers
// (rawUDP): ours, raw, ours, raw…, limitRounds rounds (the raw side
// needs the count and size the transport's run just produced).
//
//	go test -run XXX -bench Limit -benchtime 2000000x ./multicast/
//
// Reported, as medians over the rounds, with the lowest and highest
// per-round ratio:
//
//   - dgrams/s and raw-dgrams/s: datagrams delivered per second by each
//     side (the transport's: its original DATA datagrams over the time
//     its subscriber took to deliver every message);
//   - msgs/dgram: the transport's messages per datagram (the raw side
//     carries no messages: its datagrams are as many and as large);
//   - x-raw, x-raw-min, x-raw-max: dgrams/s over raw-dgrams/s;
//   - msgs/s: messages delivered per second;
//   - bytes/dgram, rcvbuf and raw-rcvbuf: the datagram size and the
//     receive buffers the kernel granted each side;
//   - lost, raw-lost: messages the transport reported lost (0 with flow
//     control) and raw datagrams the raw receiver never got;
//   - raw-offload-dgrams/s, x-raw-offload (-min, -max), raw-offload-lost:
//     the same against raw datagrams sent with UDP GSO and read with GRO
//     (rawUDPOffload), the kernel offloads the transport itself uses
//     where it can: what the wire allows with them;
//   - nooffload-dgrams/s, nooffload-x-raw: the transport with
//     Config.NoOffload (one datagram per sendmmsg and recvmmsg entry,
//     no padding), run after the raw sides: what the offloads gave;
//     against raw-nooffload-dgrams/s, a raw run of as many datagrams of
//     its own (unpadded, some 4% smaller) size, run right after it;
//   - batch-dgrams/s, batch-x-raw (-min, -max): the transport read with
//     Subscriber.ReceiveBatch instead of Receive, as the raw receiver
//     reads its datagrams in batches (the publisher's side unchanged),
//     against the same round's raw run;
//   - batches-x-raw (-min, -max): batches on both sides, as raw's
//     sendmmsg and recvmmsg: the transport with Config.NoOffload,
//     published with PublishBatch (limitPubBatch messages a call) and
//     read with ReceiveBatch, against the same round's raw run of
//     NoOffload's size (no offloads either);
//   - offload-batches-x-raw-offload (-min, -max): the same with the
//     offloads on, against raw with GSO/GRO.
func BenchmarkLimit(b *testing.B) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	var ours, plain, batched, raw, rawOff, ratio, ratioPlain, ratioBatch, ratioOff, perDgram, msgs []float64
	var rawPlain, ratioBatches, ratioOffBatches []float64
	var lost, rawLost, rawOffLost uint64
	var size, rcvbuf, rawRcvbuf int
	for round := range limitRounds {
		o := limitOurs(b, false, rateOpts{})
		size = int(o.bytes / o.datagrams)
		r := rawUDP(b, int(o.datagrams), size)
		ro := rawUDPOffload(b, int(o.datagrams), size)
		np := limitOurs(b, true, rateOpts{})
		npSize := int(np.bytes / np.datagrams)
		rp := rawUDP(b, int(np.datagrams), npSize) // unpadded, as NoOffload's
		rawPlain = append(rawPlain, rp.rate)
		rawLost += uint64(int(np.datagrams) - rp.got)
		ob := limitOurs(b, false, rateOpts{recvBatch: true})
		bb := limitOurs(b, true, rateOpts{recvBatch: true, pubBatch: limitPubBatch})
		obb := limitOurs(b, false, rateOpts{recvBatch: true, pubBatch: limitPubBatch})
		bbDg := bb.msgs * float64(bb.datagrams) / float64(b.N)
		obbDg := obb.msgs * float64(obb.datagrams) / float64(b.N)
		ratioBatches, ratioOffBatches = append(ratioBatches, bbDg/rp.rate), append(ratioOffBatches, obbDg/ro.rate)
		lost += bb.lost + obb.lost
		obDg := ob.msgs * float64(ob.datagrams) / float64(b.N)
		batched, ratioBatch = append(batched, obDg), append(ratioBatch, obDg/r.rate)
		lost += ob.lost
		npDg := np.msgs * float64(np.datagrams) / float64(b.N)
		plain, ratioPlain = append(plain, npDg), append(ratioPlain, npDg/rp.rate)
		lost += np.lost
		dg := o.msgs * float64(o.datagrams) / float64(b.N)
		ours, raw = append(ours, dg), append(raw, r.rate)
		ratio = append(ratio, dg/r.rate)
		rawOff, ratioOff = append(rawOff, ro.rate), append(ratioOff, dg/ro.rate)
		perDgram = append(perDgram, float64(b.N)/float64(o.datagrams))
		msgs = append(msgs, o.msgs)
		lost += o.lost
		rawLost += uint64(int(o.datagrams) - r.got)
		rawOffLost += uint64(int(o.datagrams) - ro.got)
		rcvbuf, rawRcvbuf = o.recvBuf, r.recvBuffer
		b.Logf("round %d: transport %.0f dgrams/s (%d of %d B, %.1f msgs each, %.0f msgs/s, %d lost, rcvbuf %d, GSO %v, GRO %v); raw %.0f dgrams/s (%d of %d received, rcvbuf %d), x-raw %.2f; raw with GSO/GRO %.0f dgrams/s (%d received), x-raw-offload %.2f; transport with NoOffload %.0f dgrams/s (%d of %d B), raw of that size %.0f dgrams/s (%d received), x-raw %.2f; transport read with ReceiveBatch %.0f dgrams/s, x-raw %.2f; batches both sides, no offloads %.0f dgrams/s (%.0f msgs/s), x-raw %.2f; with offloads %.0f dgrams/s (%.0f msgs/s), x-raw-offload %.2f",
			round+1, dg, o.datagrams, size, perDgram[round], o.msgs, o.lost, o.recvBuf, o.gso, o.gro, r.rate, r.got, o.datagrams, r.recvBuffer, ratio[round], ro.rate, ro.got, ratioOff[round], npDg, np.datagrams, npSize, rp.rate, rp.got, ratioPlain[round], obDg, ratioBatch[round], bbDg, bb.msgs, ratioBatches[round], obbDg, obb.msgs, ratioOffBatches[round])
	}
	b.ReportMetric(median(ours), "dgrams/s")
	b.ReportMetric(median(raw), "raw-dgrams/s")
	b.ReportMetric(median(perDgram), "msgs/dgram")
	b.ReportMetric(median(msgs), "msgs/s")
	reportSpread(b, ratio, "x-raw")
	b.ReportMetric(median(plain), "nooffload-dgrams/s")
	b.ReportMetric(median(rawPlain), "raw-nooffload-dgrams/s")
	b.ReportMetric(median(ratioPlain), "nooffload-x-raw")
	b.ReportMetric(median(batched), "batch-dgrams/s")
	reportSpread(b, ratioBatch, "batch-x-raw")
	reportSpread(b, ratioBatches, "batches-x-raw")
	reportSpread(b, ratioOffBatches, "offload-batches-x-raw-offload")
	b.ReportMetric(median(rawOff), "raw-offload-dgrams/s")
	reportSpread(b, ratioOff, "x-raw-offload")
	b.ReportMetric(float64(rawOffLost), "raw-offload-lost")
	b.ReportMetric(float64(size), "bytes/dgram")
	b.ReportMetric(float64(rcvbuf), "rcvbuf")
	b.ReportMetric(float64(rawRcvbuf), "raw-rcvbuf")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(rawLost), "raw-lost")
	b.ReportMetric(0, "ns/op")
}

// limitRounds is how many interleaved rounds BenchmarkLimit runs.
const limitRounds = 7

// limitPubBatch is how many messages a PublishBatch call of
// BenchmarkLimit takes: as many as raw's sendmmsg carries in a call
// (DefaultBatch datagrams of 19 messages).
const limitPubBatch = DefaultBatch * 19

// limitOurs is the transport's side of BenchmarkLimit, with or without
// the kernel's UDP offloads, published and read as o says.
func limitOurs(b *testing.B, noOffload bool, o rateOpts) rateResult {
	cfg := testConfig(b)
	// MinReceivers 1: the publisher waits for the subscriber's first
	// STATUS; outrun before it, a subscriber is never waited for
	// (reliable.FlowConfig.MinReceivers), and a round lost messages.
	cfg.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1}
	cfg.NoOffload = noOffload
	return transportRateConfig(b, b.N, cfg, cfg, o)
}
