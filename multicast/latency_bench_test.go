package multicast

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// BenchmarkLatency measures one-way latency at a fixed open-loop rate,
// publisher process → subscriber in this process, through the transport
// and through raw UDP multicast, in latencyRounds interleaved rounds (the
// two alternate which goes first). Each message is stamped with the time
// it was scheduled to be sent, not the time it was sent, so a stall
// delays the messages behind it and shows in the tail (no coordinated
// omission). The sender is another process (this test binary again) so
// that its clock-spinning pacer cannot delay the receiver's goroutines.
// b.N is the number of messages per side and round. Every round is
// logged; the metrics are the medians over the rounds.
//
//	go test -run XXX -bench Latency -benchtime 20000x ./multicast/
//
// The rate is 10,000 msgs/s; BROKERLESS_LATENCY_RATES=10000,30000,100000
// runs one sub-benchmark per rate.
func BenchmarkLatency(b *testing.B) {
	rates := []int{10_000}
	if s := os.Getenv("BROKERLESS_LATENCY_RATES"); s != "" {
		rates = rates[:0]
		for _, f := range strings.Split(s, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r <= 0 {
				b.Fatalf("BROKERLESS_LATENCY_RATES=%q: want positive integers separated by commas", s)
			}
			rates = append(rates, r)
		}
	}
	if len(rates) == 1 {
		benchLatency(b, rates[0])
		return
	}
	for _, rate := range rates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { benchLatency(b, rate) })
	}
}

// benchLatency is BenchmarkLatency at one rate.
func benchLatency(b *testing.B, rate int) {
	if b.N < 1000 {
		return // the testing package's first, calibration call
	}
	quantiles := []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}, {"p99.9", 0.999}}
	ours := make([][]float64, len(quantiles))
	raw := make([][]float64, len(quantiles))
	var ratio []float64
	for round := range latencyRounds {
		var r, o *latency.Histogram
		if round%2 == 0 {
			r, o = receiveLatency(b, "raw", b.N, rate), receiveLatency(b, "mcast", b.N, rate)
		} else {
			o, r = receiveLatency(b, "mcast", b.N, rate), receiveLatency(b, "raw", b.N, rate)
		}
		for i, q := range quantiles {
			ours[i] = append(ours[i], float64(o.Quantile(q.q).Microseconds()))
			raw[i] = append(raw[i], float64(r.Quantile(q.q).Microseconds()))
		}
		ratio = append(ratio, float64(o.Quantile(0.99))/float64(r.Quantile(0.99)))
		b.Logf("round %d: transport p50 %v p99 %v p99.9 %v; raw p50 %v p99 %v p99.9 %v; p99 %.2f× raw",
			round+1, o.Quantile(0.5), o.Quantile(0.99), o.Quantile(0.999),
			r.Quantile(0.5), r.Quantile(0.99), r.Quantile(0.999), ratio[round])
	}
	for i, q := range quantiles {
		b.ReportMetric(median(ours[i]), q.name+"-µs")
		b.ReportMetric(median(raw[i]), "raw-"+q.name+"-µs")
	}
	b.ReportMetric(median(ratio), "p99-x-raw")
	b.ReportMetric(0, "ns/op")
}

// latencyRounds is how many interleaved rounds BenchmarkLatency runs.
const latencyRounds = 5

// Environment of the sender process.
const (
	envSender = "BROKERLESS_LATENCY_SENDER" // raw or mcast
	envGroup  = "BROKERLESS_LATENCY_GROUP"
	envFeed   = "BROKERLESS_LATENCY_FEED"
	envCount  = "BROKERLESS_LATENCY_COUNT"
	envRate   = "BROKERLESS_LATENCY_RATE"
)

func TestMain(m *testing.M) {
	if kind := os.Getenv(envSender); kind != "" {
		if err := runSender(kind); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// receiveLatency starts a sender process of the given kind and records
// the latency of n messages.
func receiveLatency(b *testing.B, kind string, n, rate int) *latency.Histogram {
	cfg := testConfig(b)
	var next func(ctx context.Context) (time.Time, error)
	if kind == "raw" {
		rc := rawReceiver(b, cfg)
		buf := make([]byte, 2048)
		next = func(ctx context.Context) (time.Time, error) {
			dl, _ := ctx.Deadline()
			_ = rc.SetReadDeadline(dl)
			for {
				k, _, err := rc.ReadFromUDPAddrPort(buf)
				if err != nil || k == benchPayload {
					return time.Unix(0, int64(binary.BigEndian.Uint64(buf))), err
				}
			}
		}
	} else {
		s := mustSub(b, cfg)
		next = func(ctx context.Context) (time.Time, error) {
			for {
				ev, err := s.Receive(ctx)
				if err != nil || ev.Kind == transport.EventMessage {
					return ev.Message.Time, err
				}
			}
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSender+"="+kind, envGroup+"="+cfg.Group.String(),
		envFeed+"="+strconv.Itoa(int(cfg.Feed)), envCount+"="+strconv.Itoa(n), envRate+"="+strconv.Itoa(rate))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := latency.New()
	for int(h.Count()) < n {
		sent, err := next(ctx)
		if err != nil {
			b.Fatalf("%s: after %d messages: %v", kind, h.Count(), err)
		}
		h.Record(time.Since(sent))
	}
	return h
}

// runSender is the sender process: it sends the messages its
// environment asks for, on the schedule, then exits.
func runSender(kind string) error {
	group, err := netip.ParseAddrPort(os.Getenv(envGroup))
	if err != nil {
		return err
	}
	feed, _ := strconv.Atoi(os.Getenv(envFeed))
	n, _ := strconv.Atoi(os.Getenv(envCount))
	rate, _ := strconv.Atoi(os.Getenv(envRate))
	cfg := Config{Group: group, Interface: "lo", HostOnly: true, Feed: uint32(feed)}
	var buf [benchPayload]byte
	if kind == "raw" {
		ifi, addr, err := cfg.prepare()
		if err != nil {
			return err
		}
		sc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		if err != nil {
			return err
		}
		defer sc.Close()
		if err := setupSender(sc, ifi, &cfg); err != nil {
			return err
		}
		schedule(n, rate, func(_ int, due time.Time) {
			binary.BigEndian.PutUint64(buf[:], uint64(due.UnixNano()))
			_, _ = sc.WriteToUDPAddrPort(buf[:], group)
		})
		return nil
	}
	p, err := NewPublisher(context.Background(), cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	schedule(n, rate, func(_ int, due time.Time) {
		_ = p.Publish(ctx, transport.Message{Time: due, Payload: buf[:]})
	})
	return p.Close()
}

// schedule calls send for message i at start + i/rate, catching up on
// every message due when it wakes late. Timers here round sleeps up to a
// millisecond, so the last stretch before each message is spent
// spinning on the clock.
func schedule(n, rate int, send func(i int, due time.Time)) {
	start := time.Now().Add(20 * time.Millisecond) // let the receiver settle
	period := time.Second / time.Duration(rate)
	for i := 0; i < n; {
		now := time.Now()
		for ; i < n; i++ {
			due := start.Add(time.Duration(i) * period)
			if wait := due.Sub(now); wait > 0 {
				if wait > 2*time.Millisecond {
					time.Sleep(wait - 2*time.Millisecond)
				}
				break
			}
			send(i, due)
		}
	}
}
