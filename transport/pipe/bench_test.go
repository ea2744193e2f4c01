package pipe_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
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

// benchLogdURL is the URL the benchmarks publish to topic on the logd at
// addr with: the publisher's defaults, or the codec
// BROKERLESS_BENCH_COMPRESSION names (compression=none for payloads
// that do not compress), the same for every side of a run.
func benchLogdURL(addr, topic string) string {
	u := "logd://" + addr + "/" + topic
	if c := os.Getenv("BROKERLESS_BENCH_COMPRESSION"); c != "" {
		u += "?compression=" + c
	}
	return u
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
	phase("server", func() { go srv.Serve(ln) }) // its connections' goroutines inherit the label
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// logdAlone publishes n messages to a topic as fast as it can and
// returns the rate at which logd acknowledged them: one at a time
// (Publish) when batch is 0, else batch at a time
// (kafka.Publisher.PublishReceipts, as a pipe writes), every receipt
// checked.
func logdAlone(b *testing.B, addr, topic string, n int, payloads [][]byte, headers []transport.Header, batch int) float64 {
	b.Helper()
	ctx := context.Background()
	pub, err := transport.OpenPublisher(ctx, benchLogdURL(addr, topic))
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	bp, ok := pub.(interface {
		PublishReceipts(context.Context, []transport.Message, func(int, transport.Receipt, error)) (int, error)
	})
	if batch > 0 && !ok {
		b.Fatal("the logd publisher takes no batches")
	}
	var failed atomic.Int64
	done := func(_ int, _ transport.Receipt, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	ms := make([]transport.Message, 0, batch)
	start := time.Now()
	for i := range n {
		m := transport.Message{Payload: payloads[i%len(payloads)], Headers: headers}
		if batch == 0 {
			if err := pub.Publish(ctx, m); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if ms = append(ms, m); len(ms) == batch || i == n-1 {
			if _, err := bp.PublishReceipts(ctx, ms, done); err != nil {
				b.Fatal(err)
			}
			ms = ms[:0]
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	rate := float64(n) / time.Since(start).Seconds()
	if f := failed.Load(); f > 0 {
		b.Fatalf("logd refused %d records", f)
	}
	return rate
}

// A recorder's feed (BenchmarkRecorder): it lasts feedTime, and its
// publisher's window holds windowTime of it.
const (
	feedTime   = time.Second
	windowTime = 100 * time.Millisecond
)

// startBenchPipe runs a pipe from the feed on group (join=earliest) into
// topic of the logd at addr; done gets its Run's result, and stop closes
// its ends once it has returned.
func startBenchPipe(b *testing.B, ctx context.Context, group netip.AddrPort, addr, topic string, cfg pipe.Config) (p *pipe.Pipe, done <-chan error, stop func()) {
	return startBenchPipeURL(b, ctx, fmt.Sprintf("mcast://%v?iface=lo&ttl=0&join=earliest", group), addr, topic, cfg)
}

// startBenchPipeURL is startBenchPipe from the source URL from.
func startBenchPipeURL(b *testing.B, ctx context.Context, from, addr, topic string, cfg pipe.Config) (p *pipe.Pipe, done <-chan error, stop func()) {
	b.Helper()
	sub, err := transport.OpenSubscriber(ctx, from)
	if err != nil {
		b.Fatal(err)
	}
	to, err := transport.OpenPublisher(ctx, benchLogdURL(addr, topic))
	if err != nil {
		sub.Close()
		b.Fatal(err)
	}
	if p, err = pipe.New(sub, to, cfg); err != nil {
		sub.Close()
		to.Close()
		b.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- p.Run(ctx) }()
	return p, ch, func() { sub.Close(); to.Close() }
}

// finishRun waits until the pipe p (running, its Run's result on done)
// has forwarded or marked n messages with nothing in flight, at most 60 s,
// then stops it and returns how many it marked. what names it in
// failures.
func finishRun(b *testing.B, p *pipe.Pipe, done <-chan error, cancel context.CancelFunc, n int, what string) int {
	waitHandled(b, p, done, n, what)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return int(p.Stats().Marked)
}

// waitHandled waits until the pipe p (running, its Run's result on
// done) has forwarded or marked n messages with nothing in flight, at
// most 60 s.
func waitHandled(b *testing.B, p *pipe.Pipe, done <-chan error, n int, what string) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := p.Stats()
		if s.Forwarded+s.Marked >= uint64(n) && s.InFlight == 0 {
			break
		}
		select {
		case err := <-done:
			b.Fatalf("%s ended: %v", what, err)
		case <-time.After(time.Millisecond): // polling the pipe's counters
		}
		if time.Now().After(deadline) {
			b.Fatalf("the %s handled %d of %d messages in 60s", what, s.Forwarded+s.Marked, n)
		}
	}
}
