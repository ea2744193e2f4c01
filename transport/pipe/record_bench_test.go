package pipe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
	"github.com/brokerless/brokerless/transport/pipe"
)

// BenchmarkRecorder: the recording rate of a feed's archive (`brokerless
// mcast record` is this pipe, mcast:// with join=earliest → logd://), for
// 64-byte and 1 KiB messages, fed two ways:
//
//   - live: our multicast publisher runs in this process, on the same
//     two cores as the recorder and logd, framing every message,
//     keeping its retransmit window (0.1 s of the feed) and answering
//     the recorder's NACKs from it;
//   - replayed: no publisher runs. Once per message size, before the
//     rounds, the datagrams that publisher sends for n' messages
//     (BROKERLESS_RECORD_REPLAY_MESSAGES, default 3,000,000 for 64
//     bytes, 400,000 for 1 KiB) are captured byte for byte by a plain
//     socket joined to its group on lo; each run sends the first of
//     them again, unchanged, paced, with sendmmsg, runs of equal-size
//     datagrams as one UDP GSO entry each as the publisher sends them
//     (BROKERLESS_RECORD_REPLAY_GSO=0: one datagram an entry), then a
//     heartbeat every 10 ms announcing its end. It answers NACKs as the
//     publisher would from a window as large as the live one's
//     (feedWindow): an NCF for what it will repair, then the datagrams
//     again, their repair flag set, at the publisher's repair rate, or a
//     LOST notice for what is older. The benchmark's cores pay what a feed from another machine costs the
//     recorder's: the kernel's path of the datagrams (on lo the sender's
//     system call also runs the receiver's side) and the recorder; not
//     the publisher's work, which is the exchange's machine's. A run at
//     rate r sends at most n' messages: it lasts min(feedTime, n'/r).
//
// Each round, on one logd in the process (its default configuration:
// group commit), in this order:
//
//   - logd alone (L1): one publisher (logd://, acks=all, idempotent, as the
//     recorder's) writing n records as the recorder writes them (the
//     payload and its origin header, brokerless.origin with a 36-byte
//     value), as fast as it can, through the same client call as the
//     recorder (kafka.Publisher.PublishReceipts, batches of
//     recordBatch);
//   - the recorder: the highest rate of the live feed (lo, TTL 0, paced,
//     one second) that it records whole, with no gap marker, searched
//     from 1.25 L1 (highestWhole), L1 logd alone's rate measured just
//     before: rate R, the rate the feed reached (below the pace asked when the
//     publisher cannot keep it). One stall of the recorder longer than
//     the window fails a run, so R measures the recorder's pauses as
//     much as its throughput;
//   - the recorder of the replayed feed: likewise, rate RR;
//   - the recorder as a flow-control receiver of the live feed (`mcast
//     record --flow-tag 1`, the feed's publisher `--flow tagged
//     --flow-tag 1`, as Aeron's archive is a required receiver), which
//     must lose nothing: the highest rate of the same paced feed that
//     it keeps up with, the feed reaching at least 95% of the pace asked
//     (flow control holds the feed while the recorder stalls, and the
//     pacer catches up after), searched from 1.25 L1: rate RF; and
//     the rate RM of a feed of n messages published as fast as the
//     recorder lets it, n over the time from the first publish to the
//     last record acknowledged by logd, as logd alone's (a replay cannot
//     be held back: flow control is measured live only);
//   - logd alone again (L2); L is the mean of L1 and L2, so that both
//     sides of the ratios see the same load;
//   - the live feed: the highest rate of the live feed that a plain
//     subscriber receives whole, with no gap, searched from 4L: rate
//     F, likewise reached; and of the replayed feed: rate FR.
//
// Each run that writes to logd (logd alone's and the recorder's) starts
// on a logd emptied of the runs before, their topics deleted and what
// they left dirty in the page cache written back (freshLogd), outside
// the run's clock, so that each starts from the same disk and memory
// state: logd alone after the recorder's search, with gigabytes of
// earlier runs on disk and in the page cache, ran at a third to a half
// of its rate before it (1 KiB records), and the recorder's CPU a
// message doubled from one round to the next.
//
// Reported as medians over BROKERLESS_RECORD_ROUNDS rounds (default 3),
// each round logged: record/logd = R/L (the target is ≥ 0.8),
// record/live = R/F, record-replay/logd = RR/L, record-replay/live-replay
// = RR/FR, record-flow/logd = RF/L, record-flow/live = RF/F and
// record-flow-max/logd = RM/L; and the process's CPU time a message
// (logd, in the process, included): of logd alone (L1), and of the
// recorder's run that reached R (live: the publisher's included) and
// RR (replayed). n is BROKERLESS_RECORD_MESSAGES (default
// 200,000 for 64 bytes, 50,000 for 1 KiB). Every side writes with the
// publisher's default codec (snappy), or with the one
// BROKERLESS_BENCH_COMPRESSION names (none: the random payloads do not
// compress). Each phase runs under the profiler label phase (capture,
// logd, record, record-replay, record-flow, live, live-replay; logd's
// own goroutines server): a -cpuprofile of the benchmark splits with go
// tool pprof -tagfocus 'phase=record$' (a regular expression).
func BenchmarkRecorder(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			rounds := benchEnv("BROKERLESS_RECORD_ROUNDS", 3)
			def, defReplay := 200_000, 3_000_000
			if size > 64 {
				def, defReplay = 50_000, 400_000
			}
			n := benchEnv("BROKERLESS_RECORD_MESSAGES", def)
			if note := latency.PageReportingNote(); note != "" {
				b.Log(note)
			}
			addr := startLogd(b)
			fresh := func() { freshLogd(b, addr) }
			payloads := randomPayloads(size)
			headers := transport.AppendOrigin(nil, transport.Origin{Stream: transport.StreamID{Feed: 1, Session: rand.Uint64()}, Seq: uint64(n), Time: time.Now(), Topic: "AAPL"})
			var capture *feedCapture
			phase("capture", func() {
				m := benchEnv("BROKERLESS_RECORD_REPLAY_MESSAGES", defReplay)
				capture = captureFeed(b, payloads, m, feedWindow(float64(m), size))
			})
			replay := replayFeed(capture, size, benchEnv("BROKERLESS_RECORD_REPLAY_GSO", 1) == 1)
			live := liveFeed(payloads)
			var logdRates, recRates, liveRates, recLogd, recLive, flowRates, flowLogd, flowLive, maxRates, maxLogd []float64
			var replayRates, liveReplayRates, replayLogd, replayLive []float64
			var cpuLogds, cpuRecs, cpuReplays []float64
			topic := 0
			next := func(kind string) string { topic++; return fmt.Sprintf("%s-%d", kind, topic) }
			for r := range rounds {
				var (
					l1, l2, rec, feedRate, flow, flowMax, recReplay, feedReplay  float64
					cpuLogd, cpuRec, cpuReplay                                   float64 // CPU µs a message: logd alone (L1), the recorder's best runs
					recTried, liveTried, flowTried, replayTried, liveReplayTried []string
					flowLost                                                     int
					flowHeld                                                     uint64
				)
				phase("logd", func() {
					fresh()
					c := cpuPer(n)
					l1 = logdAlone(b, addr, next("alone"), n, payloads, headers, recordBatch)
					cpuLogd = c()
				})
				phase("record", func() {
					rec, recTried = highestWhole(1.25*l1, cpuAtBest(&cpuRec, live, fresh, func(rate float64) (int, float64) { return recordRun(b, addr, next("rec"), live, rate) }))
				})
				if capture != nil {
					phase("record-replay", func() {
						recReplay, replayTried = highestWhole(1.25*l1, cpuAtBest(&cpuReplay, replay, fresh, func(rate float64) (int, float64) { return recordRun(b, addr, next("replay"), replay, rate) }))
					})
				}
				phase("record-flow", func() {
					flow, flowTried = highestWhole(1.25*l1, func(rate float64) (int, float64) {
						marked, reached := recordFlowPaced(b, addr, next("flow"), payloads, rate)
						flowLost += marked
						if marked == 0 && reached < 0.95*rate {
							marked = -1 // held back: the recorder did not keep up
						}
						return marked, reached
					})
					var lost int
					flowMax, lost, flowHeld = recordFlowRun(b, addr, next("flow"), payloads, l1, n)
					flowLost += lost
				})
				phase("logd", func() {
					fresh()
					l2 = logdAlone(b, addr, next("alone"), n, payloads, headers, recordBatch)
				})
				l := (l1 + l2) / 2 // logd alone on both sides of the recorder's search
				phase("live", func() {
					feedRate, liveTried = highestWhole(4*l, func(rate float64) (int, float64) { return liveRun(b, live, rate) })
				})
				if capture != nil {
					phase("live-replay", func() {
						feedReplay, liveReplayTried = highestWhole(4*l, func(rate float64) (int, float64) { return liveRun(b, replay, rate) })
					})
				}
				logdRates, recRates, liveRates = append(logdRates, l), append(recRates, rec), append(liveRates, feedRate)
				cpuLogds, cpuRecs = append(cpuLogds, cpuLogd), append(cpuRecs, cpuRec)
				recLogd, recLive = append(recLogd, rec/l), append(recLive, rec/feedRate)
				flowRates, flowLogd, flowLive = append(flowRates, flow), append(flowLogd, flow/l), append(flowLive, flow/feedRate)
				maxRates, maxLogd = append(maxRates, flowMax), append(maxLogd, flowMax/l)
				b.Logf("round %d, %d-byte messages, each record %d bytes of payload and a %d-byte origin header, acks=all, logd default config: logd alone (PublishReceipts, %d a call) %.0f records/s (%.0f before the recorder's search, %.0f after; %.2f µs CPU a record before); LIVE FEED (our publisher in this process): recorder (mcast join=earliest → pipe → PublishReceipts, up to 1024 a call) %.0f msgs/s whole (%.2f of logd; %.2f µs CPU a message); a plain subscriber %.0f msgs/s whole (recorder %.2f of it); recorder with flow control %.0f msgs/s kept (%.2f of logd, %.2f of the live feed), %.0f msgs/s holding back an unpaced feed (%.2f of logd, feed held %d times), %d marked lost; rate/reached:lost (-1: held back) recorder %v, with flow control %v, plain subscriber %v",
					r+1, size, size, len(headers[0].Value), recordBatch, l, l1, l2, cpuLogd, rec, rec/l, cpuRec, feedRate, rec/feedRate, flow, flow/l, flow/feedRate, flowMax, flowMax/l, flowHeld, flowLost, recTried, flowTried, liveTried)
				if capture != nil {
					replayRates, liveReplayRates = append(replayRates, recReplay), append(liveReplayRates, feedReplay)
					cpuReplays = append(cpuReplays, cpuReplay)
					replayLogd, replayLive = append(replayLogd, recReplay/l), append(replayLive, recReplay/feedReplay)
					b.Logf("round %d, %d-byte messages: REPLAYED FEED (%d datagrams of our publisher holding %d messages, replayed with no publisher running, NACKs answered from a window as the live one; a run at a rate r lasts min(1 s, %d/r)): recorder %.0f msgs/s whole (%.2f of logd alone; %.2f µs CPU a message); a plain subscriber %.0f msgs/s whole (recorder %.2f of it); rate/reached:lost recorder %v, plain subscriber %v",
						r+1, size, capture.datagrams(), capture.messages(), capture.messages(), recReplay, recReplay/l, cpuReplay, feedReplay, recReplay/feedReplay, replayTried, liveReplayTried)
				}
				if flowLost > 0 {
					b.Errorf("round %d: the recorder with flow control marked %d messages lost", r+1, flowLost)
				}
			}
			b.ReportMetric(median(logdRates), "logd-msgs/s")
			b.ReportMetric(median(cpuLogds), "logd-cpu-µs/msg")
			b.ReportMetric(median(cpuRecs), "record-cpu-µs/msg")
			b.ReportMetric(median(recRates), "record-msgs/s")
			b.ReportMetric(median(liveRates), "live-msgs/s")
			b.ReportMetric(median(recLogd), "record/logd")
			b.ReportMetric(median(recLive), "record/live")
			b.ReportMetric(median(flowRates), "record-flow-msgs/s")
			b.ReportMetric(median(flowLogd), "record-flow/logd")
			b.ReportMetric(median(flowLive), "record-flow/live")
			b.ReportMetric(median(maxRates), "record-flow-max-msgs/s")
			b.ReportMetric(median(maxLogd), "record-flow-max/logd")
			if capture != nil {
				b.ReportMetric(median(replayRates), "record-replay-msgs/s")
				b.ReportMetric(median(liveReplayRates), "live-replay-msgs/s")
				b.ReportMetric(median(replayLogd), "record-replay/logd")
				b.ReportMetric(median(replayLive), "record-replay/live-replay")
				b.ReportMetric(median(cpuReplays), "record-replay-cpu-µs/msg")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuPer starts counting the process's CPU time; the function it
// returns gives the time since, in µs, over n messages.
func cpuPer(n int) func() float64 {
	at := latency.ProcessCPU()
	return func() float64 { return float64(latency.ProcessCPU()-at) / float64(time.Microsecond) / float64(n) }
}

// cpuAtBest wraps a run of feed f for highestWhole: it calls before,
// then sets *cpu to the process's CPU time a message (µs) of the whole
// run with no loss that reached the highest rate.
func cpuAtBest(cpu *float64, f feed, before func(), run func(rate float64) (int, float64)) func(float64) (int, float64) {
	best := 0.0
	return func(rate float64) (int, float64) {
		before()
		c := cpuPer(f.messages(rate))
		lost, reached := run(rate)
		if lost == 0 && reached > best {
			best, *cpu = reached, c()
		}
		return lost, reached
	}
}

// phase runs f with the profiler label phase=name, inherited by the
// goroutines f starts (the feed's, the subscriber's, the pipe's, the
// client's; logd's are phase=server, startLogd), so that a profile of
// the benchmark splits by phase: go tool pprof -tagfocus phase=record.
func phase(name string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("phase", name), func(context.Context) { f() })
}

// recordBatch is how many records logd alone writes a call: what a
// recorder behind its feed hands its destination at once (the pipe's
// batches hold up to 1024 writes).
const recordBatch = 1024

// highestWhole searches, in six runs, for the highest rate at which run
// loses nothing: hi first; while a run loses nothing and its feed keeps
// the pace, twice the rate (hi is a guess, and a guess too low must not
// cap the result); then it halves the interval between the highest
// rate whole and the lowest that lost. run paces a feed at the rate it
// is given and returns what it lost and the rate the feed reached
// (lower when the publisher could not keep the pace). It returns the
// highest rate reached with no loss, and each run's asked/reached:lost.
func highestWhole(hi float64, run func(rate float64) (lost int, reached float64)) (float64, []string) {
	lo, best := 0.0, 0.0
	rising := true // no run has lost yet
	var tried []string
	for range 6 {
		rate := hi
		if !rising {
			rate = (lo + hi) / 2
		}
		lost, reached := run(rate)
		tried = append(tried, fmt.Sprintf("%.0f/%.0f:%d", rate, reached, lost))
		switch {
		case lost != 0:
			hi, rising = rate, false
		case rising && reached < 0.95*rate:
			return max(best, reached), tried // the feed, not the receiver, is the limit
		case rising:
			lo, best, hi = rate, max(best, reached), 2*rate
		default:
			lo, best = rate, max(best, reached)
		}
	}
	return best, tried
}

// paceFeed publishes n messages to pub paced at rate, open loop, and
// returns the rate it reached.
func paceFeed(b *testing.B, ctx context.Context, pub transport.Publisher, payloads [][]byte, rate float64, n int) float64 {
	b.Helper()
	start := time.Now()
	for sent := 0; sent < n; {
		due := min(n, int(time.Since(start).Seconds()*rate)+1)
		for ; sent < due; sent++ {
			if err := pub.Publish(ctx, transport.Message{Topic: "AAPL", Payload: payloads[sent%len(payloads)]}); err != nil {
				b.Fatal(err)
			}
		}
		if wait := time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))); wait > 0 {
			time.Sleep(max(wait, 500*time.Microsecond)) // pacing the feed, open loop
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// recordRun records the feed f paced at rate for feedTime into topic,
// as `brokerless mcast record` does, and returns how many messages the
// recorder wrote gap markers for and the rate the feed reached.
func recordRun(b *testing.B, addr, topic string, f feed, rate float64) (int, float64) {
	b.Helper()
	n := f.messages(rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	group := randomBenchGroup()
	p, done, stop := startBenchPipe(b, ctx, group, addr, topic, pipe.Config{})
	defer stop()
	reached, stopFeed := f.send(b, ctx, group, rate, n)
	defer stopFeed()
	return finishRun(b, p, done, cancel, n, "recorder"), reached
}

// feed is a feed of BenchmarkRecorder. send sends n messages to group,
// paced at rate, and returns the rate it reached and stop, to call once
// the receivers have accounted for every message (until then a
// publisher keeps answering NACKs, a replay keeps announcing its end).
// limit, when not 0, is the most messages it has.
type feed struct {
	send  func(b *testing.B, ctx context.Context, group netip.AddrPort, rate float64, n int) (reached float64, stop func())
	limit int
}

// messages is how many messages a run of f at rate sends: feedTime of
// it, at least 1000, at most f.limit (the run is then shorter).
func (f feed) messages(rate float64) int {
	n := max(1000, int(rate*feedTime.Seconds()))
	if f.limit > 0 {
		n = min(n, f.limit)
	}
	return n
}

// liveFeed is the feed of our publisher running in the benchmark
// (benchFeedPublisher, its window holding windowTime of the feed),
// paced by paceFeed.
func liveFeed(payloads [][]byte) feed {
	return feed{send: func(b *testing.B, ctx context.Context, group netip.AddrPort, rate float64, n int) (float64, func()) {
		pub := benchFeedPublisher(b, ctx, group, payloads, rate, reliable.FlowConfig{})
		paced := false
		defer func() {
			if !paced { // b.Fatal in paceFeed
				pub.Close()
			}
		}()
		reached := paceFeed(b, ctx, pub, payloads, rate, n)
		paced = true
		return reached, func() { pub.Close() }
	}}
}

// replayFeed is the replay of the datagrams c, captured from our
// publisher of size-byte messages: no publisher runs; NACKs are
// answered from a window of the datagrams sent as large as the live
// publisher's (feedWindow).
func replayFeed(c *feedCapture, size int, gso bool) feed {
	return feed{send: func(b *testing.B, _ context.Context, group netip.AddrPort, rate float64, n int) (float64, func()) {
		return c.replay(b, group, rate, n, feedWindow(rate, size), gso)
	}, limit: c.messages()}
}

// recorderTag is the flow-control tag the recorder reports with flow
// control (`mcast record --flow-tag`), and the feed waits for.
const recorderTag = 1

// startFlowRecording starts a recorder reporting flow-control tag
// recorderTag (flow-tag=1 in its URL) and a feed publisher at rate
// that waits for it (flow=tagged, for one receiver before the first
// message), and returns once the recorder has recorded the feed's
// first message: the feed may start. stop closes the publisher, then
// the recorder.
func startFlowRecording(b *testing.B, ctx context.Context, addr, topic string, payloads [][]byte, rate float64) (p *pipe.Pipe, done <-chan error, pub *multicast.Publisher, stop func()) {
	b.Helper()
	group := randomBenchGroup()
	p, done, stopPipe := startBenchPipeURL(b, ctx, fmt.Sprintf("mcast://%v?iface=lo&ttl=0&join=earliest&flow-tag=%d", group, recorderTag), addr, topic, pipe.Config{})
	pub = benchFeedPublisher(b, ctx, group, payloads, rate, reliable.FlowConfig{Mode: reliable.FlowTagged, Tag: recorderTag, MinReceivers: 1})
	stop = func() {
		pub.Close()
		stopPipe()
	}
	started := false
	defer func() {
		if !started { // b.Fatal below
			stop()
		}
	}()
	if err := pub.Publish(ctx, transport.Message{Topic: "AAPL", Payload: payloads[0]}); err != nil {
		b.Fatal(err)
	}
	waitHandled(b, p, done, 1, "recorder")
	started = true
	return p, done, pub, stop
}

// recordFlowPaced is recordRun with flow control: the feed's publisher
// waits for the recorder (flow=tagged, for one receiver before the
// first message), the recorder reporting its tag (flow-tag=1 in its
// URL, `mcast record --flow-tag 1`). It returns how many messages the
// recorder marked lost (none, unless it went silent for the flow
// timeout) and the rate the feed reached.
func recordFlowPaced(b *testing.B, addr, topic string, payloads [][]byte, rate float64) (int, float64) {
	b.Helper()
	freshLogd(b, addr)
	n := max(1000, int(rate*feedTime.Seconds()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, done, pub, stop := startFlowRecording(b, ctx, addr, topic, payloads, rate)
	defer stop()
	reached := paceFeed(b, ctx, pub, payloads, rate, n)
	return finishRun(b, p, done, cancel, n+1, "recorder"), reached
}

// recordFlowRun records a feed published as fast as the recorder lets
// it: the feed's publisher waits for the recorder (flow=tagged, its
// window sized for a feed at rate, as recordRun's), the recorder
// reporting its tag (flow-tag=1 in its URL, `mcast record --flow-tag
// 1`). After one message, recorded, to start the flow, it publishes n
// and returns the rate at which the recorder had them all accepted by
// logd (as logd alone's rate: from the first publish to the last
// acknowledgement), how many it marked as gaps (none, unless the
// recorder went silent for the flow timeout) and how often flow
// control held the feed.
func recordFlowRun(b *testing.B, addr, topic string, payloads [][]byte, rate float64, n int) (float64, int, uint64) {
	b.Helper()
	freshLogd(b, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, done, pub, stop := startFlowRecording(b, ctx, addr, topic, payloads, rate)
	defer stop()
	start := time.Now()
	for i := range n {
		if err := pub.Publish(ctx, transport.Message{Topic: "AAPL", Payload: payloads[i%len(payloads)]}); err != nil {
			b.Fatal(err)
		}
	}
	waitHandled(b, p, done, n+1, "recorder")
	got := float64(n) / time.Since(start).Seconds()
	return got, finishRun(b, p, done, cancel, n+1, "recorder"), pub.Stats().FlowHeld
}

func randomBenchGroup() netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{239, 255, byte(rand.IntN(256)), byte(1 + rand.IntN(254))}), uint16(20000+rand.IntN(12768)))
}

// benchFeedPublisher is the feed's publisher, its window feedWindow
// datagrams.
func benchFeedPublisher(b testing.TB, ctx context.Context, group netip.AddrPort, payloads [][]byte, rate float64, flow reliable.FlowConfig) *multicast.Publisher {
	b.Helper()
	return windowFeedPublisher(b, ctx, group, feedWindow(rate, len(payloads[0])), flow)
}

// windowFeedPublisher is benchFeedPublisher with a window of window
// datagrams.
func windowFeedPublisher(b testing.TB, ctx context.Context, group netip.AddrPort, window int, flow reliable.FlowConfig) *multicast.Publisher {
	b.Helper()
	pub, err := multicast.NewPublisher(ctx, multicast.Config{Group: group, Interface: "lo", HostOnly: true,
		Sender: reliable.SenderConfig{WindowDatagrams: window, WindowBytes: window * reliable.DefaultMTU, MaxQueued: 512, MaxMessageSize: 64 << 10, Flow: flow}})
	if err != nil {
		b.Fatal(err)
	}
	return pub
}

// feedWindow is the publisher's window, in datagrams, for a feed of
// size-byte messages at rate: windowTime of it, packed as many messages
// to a datagram of the default MTU as fit (each with ~30 bytes of
// framing and topic), at least 1024.
func feedWindow(rate float64, size int) int {
	perDatagram := max(1, (reliable.DefaultMTU-40)/(size+30))
	return max(1024, int(rate*windowTime.Seconds())/perDatagram)
}

// liveRun sends the feed f paced at rate for feedTime to one plain
// subscriber, and returns how many messages the subscriber reported
// lost and the rate the feed reached.
func liveRun(b *testing.B, f feed, rate float64) (int, float64) {
	b.Helper()
	n := f.messages(rate)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	group := randomBenchGroup()
	scfg := multicast.Config{Group: group, Interface: "lo", HostOnly: true}
	scfg.Receiver.Join = reliable.JoinEarliest
	sub, err := multicast.NewSubscriber(ctx, scfg)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	type result struct {
		got, lost int
		err       error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for r.got+r.lost < n {
			ev, err := sub.Receive(ctx)
			if err != nil {
				r.err = err
				break
			}
			switch ev.Kind {
			case transport.EventMessage:
				r.got++
			case transport.EventGap:
				r.lost += int(ev.Gap.Len())
			case transport.EventStreamEnd:
				r.lost += n - r.got - r.lost
			}
		}
		done <- r
	}()
	reached, stopFeed := f.send(b, ctx, group, rate, n)
	defer stopFeed()
	select {
	case r := <-done:
		if r.err != nil {
			b.Fatal(r.err)
		}
		return r.lost, reached
	case <-time.After(60 * time.Second):
		b.Fatalf("the subscriber did not account for %d messages in 60 s", n)
		return 0, 0
	}
}
