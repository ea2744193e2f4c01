package pipe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	_ "github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport"
	_ "github.com/brokerless/brokerless/transport/kafka"
	"github.com/brokerless/brokerless/transport/pipe"
)

// benchEnv reads a positive integer from the environment.
func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkPipeMcastToLogd: does a pipe from a multicast feed into logd
// sustain the rate logd alone sustains for the same messages? Each round,
// on one logd (in the process, default fsync: group commit), measures:
//
//   - logd alone: one publisher (logd://, acks=all) publishing n messages
//     of BROKERLESS_PIPE_SIZE bytes (default 64) as fast as it can, until
//     all are acknowledged: rate A;
//   - logd alone with the records the pipe writes (the same payload plus
//     its origin headers, about 110 bytes): rate A';
//   - the pipe: a multicast publisher (lo, TTL 0) paced at A, a pipe
//     (mcast:// with join=earliest → logd://) writing every message:
//     rate B, the messages written over the time from the first publish
//     to the last record accepted by logd, and the messages lost (the
//     pipe, fallen behind the feed by more than the publisher's window,
//     wrote gap markers for them).
//
// Reported as medians over BROKERLESS_PIPE_ROUNDS rounds (default 5),
// each logged: pipe/logd = B/A (the target is ≥ 0.8, with nothing
// lost), pipe/logd-hdr = B/A', the three rates, and the messages lost in
// all rounds. n is BROKERLESS_PIPE_MESSAGES (default 300,000).
func BenchmarkPipeMcastToLogd(b *testing.B) {
	rounds := benchEnv("BROKERLESS_PIPE_ROUNDS", 5)
	n := benchEnv("BROKERLESS_PIPE_MESSAGES", 300_000)
	size := benchEnv("BROKERLESS_PIPE_SIZE", 64)
	addr := startLogd(b)
	payloads := randomPayloads(size)
	headers := transport.AppendOrigin(nil, transport.Origin{Stream: transport.StreamID{Feed: 1, Session: rand.Uint64()}, Seq: uint64(n), Time: time.Now(), Topic: "AAPL"})
	var alone, aloneHdr, piped, ratios, ratiosHdr []float64
	lost := 0
	for r := range rounds {
		a := logdAlone(b, addr, fmt.Sprintf("alone-%d", r), n, payloads, nil)
		ah := logdAlone(b, addr, fmt.Sprintf("alone-hdr-%d", r), n, payloads, headers)
		p, l := pipeRun(b, addr, fmt.Sprintf("pipe-%d", r), n, payloads, a)
		alone, aloneHdr, piped = append(alone, a), append(aloneHdr, ah), append(piped, p)
		ratios, ratiosHdr = append(ratios, p/a), append(ratiosHdr, p/ah)
		lost += l
		b.Logf("round %d, %d-byte messages: logd alone %.0f msgs/s (%.0f writing the pipe's records); pipe fed at %.0f msgs/s: %.0f msgs/s (%.2f of logd alone, %.2f with the same records), %d lost",
			r+1, size, a, ah, a, p, p/a, p/ah, l)
	}
	b.ReportMetric(median(alone), "logd-msgs/s")
	b.ReportMetric(median(aloneHdr), "logd-hdr-msgs/s")
	b.ReportMetric(median(piped), "pipe-msgs/s")
	b.ReportMetric(median(ratios), "pipe/logd")
	b.ReportMetric(median(ratiosHdr), "pipe/logd-hdr")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(0, "ns/op")
}

// randomPayloads returns 4096 payloads of random bytes: as a real feed's,
// they do not compress, not even a batch of them.
func randomPayloads(size int) [][]byte {
	ps := make([][]byte, 4096)
	for i := range ps {
		ps[i] = make([]byte, size)
		for j := range ps[i] {
			ps[i][j] = byte(rand.Uint32())
		}
	}
	return ps
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// startLogd runs logd in the process until the benchmark ends.
func startLogd(b *testing.B) string {
	b.Helper()
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// logdAlone publishes n messages to a topic as fast as it can and
// returns the rate at which logd acknowledged them.
func logdAlone(b *testing.B, addr, topic string, n int, payloads [][]byte, headers []transport.Header) float64 {
	b.Helper()
	ctx := context.Background()
	pub, err := transport.OpenPublisher(ctx, "logd://"+addr+"/"+topic)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	start := time.Now()
	for i := range n {
		if err := pub.Publish(ctx, transport.Message{Payload: payloads[i%len(payloads)], Headers: headers}); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// pipeRun feeds a pipe from a multicast feed paced at rate into a topic,
// and returns the rate at which logd accepted the messages the pipe
// wrote, and how many of the n the pipe wrote gap markers for.
func pipeRun(b *testing.B, addr, topic string, n int, payloads [][]byte, rate float64) (float64, int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := fmt.Sprintf("mcast://239.255.%d.%d:%d?iface=lo&ttl=0", rand.IntN(256), 1+rand.IntN(254), 20000+rand.IntN(40000))
	sub, err := transport.OpenSubscriber(ctx, feed+"&join=earliest")
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	to, err := transport.OpenPublisher(ctx, "logd://"+addr+"/"+topic)
	if err != nil {
		b.Fatal(err)
	}
	defer to.Close()
	p, err := pipe.New(sub, to, pipe.Config{MaxInFlight: benchEnv("BROKERLESS_PIPE_IN_FLIGHT", pipe.DefaultMaxInFlight)})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	pub, err := transport.OpenPublisher(ctx, feed)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()

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
	deadline := time.Now().Add(time.Duration(float64(n)/rate*float64(time.Second)) + 60*time.Second)
	for {
		s := p.Stats()
		if s.Forwarded+s.Marked >= uint64(n) && s.InFlight == 0 {
			break
		}
		select {
		case err := <-done:
			b.Fatalf("pipe ended: %v", err)
		case <-time.After(time.Millisecond): // polling the pipe's counters
		}
		if time.Now().After(deadline) {
			b.Fatalf("the pipe accepted %d of %d messages", s.Accepted, n)
		}
	}
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	s := p.Stats()
	return float64(s.Forwarded) / elapsed.Seconds(), int(s.Marked)
}
