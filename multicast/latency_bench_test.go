package multicast

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
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
//
// BROKERLESS_LATENCY_PIN=R,S binds this process (the receivers) to CPU R
// and every sender process to CPU S, for both sides alike (Linux). On a
// two-core machine the pacer spins a core, and whatever else the two
// processes run at the moment (the runtime's threads, the publisher's
// send goroutine) lands on the other's core: unbound, that contention
// is most of the transport's excess over raw UDP at 30,000 msgs/s.
//
// BROKERLESS_LATENCY_SPIN=D (a duration, such as 50us) makes both
// receivers poll their empty socket for up to D before they sleep: the
// transport's with Config.Spin, the raw one with non-blocking reads
// (spinRead), so that neither pays a thread's wake-up while messages
// come faster than one.
func BenchmarkLatency(b *testing.B) { perRate(b, benchLatency) }

// perRate runs bench at 10,000 msgs/s, or once per rate that
// BROKERLESS_LATENCY_RATES lists (a sub-benchmark each when several).
func perRate(b *testing.B, bench func(b *testing.B, rate int)) {
	if recv, _, ok, err := latencyPin(); err != nil {
		b.Fatal(err)
	} else if ok {
		if err := pinProcess(recv); err != nil {
			b.Fatal(err)
		}
	}
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
		bench(b, rates[0])
		return
	}
	for _, rate := range rates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { bench(b, rate) })
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
	var p50x, p99x []float64
	var lost, rawLost int
	for round := range latencyRounds {
		var r, o latencyRun
		if round%2 == 0 {
			r, o = receiveLatency(b, "raw", b.N, rate), receiveLatency(b, "mcast", b.N, rate)
		} else {
			o, r = receiveLatency(b, "mcast", b.N, rate), receiveLatency(b, "raw", b.N, rate)
		}
		for i, q := range quantiles {
			ours[i] = append(ours[i], float64(o.h.Quantile(q.q).Microseconds()))
			raw[i] = append(raw[i], float64(r.h.Quantile(q.q).Microseconds()))
		}
		p50x = append(p50x, float64(o.h.Quantile(0.5))/float64(r.h.Quantile(0.5)))
		p99x = append(p99x, float64(o.h.Quantile(0.99))/float64(r.h.Quantile(0.99)))
		lost, rawLost = lost+o.lost, rawLost+r.lost
		b.Logf("round %d: transport p50 %v p99 %v p99.9 %v (%d lost); raw p50 %v p99 %v p99.9 %v (%d lost); p50 %.2f× raw, p99 %.2f× raw",
			round+1, o.h.Quantile(0.5), o.h.Quantile(0.99), o.h.Quantile(0.999), o.lost,
			r.h.Quantile(0.5), r.h.Quantile(0.99), r.h.Quantile(0.999), r.lost, p50x[round], p99x[round])
	}
	for i, q := range quantiles {
		b.ReportMetric(median(ours[i]), q.name+"-µs")
		b.ReportMetric(median(raw[i]), "raw-"+q.name+"-µs")
	}
	reportSpread(b, p50x, "p50-x-raw")
	reportSpread(b, p99x, "p99-x-raw")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(rawLost), "raw-lost")
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
	envPin    = "BROKERLESS_LATENCY_PIN" // R,S: the receivers' CPU, the senders'
	envSpin   = "BROKERLESS_LATENCY_SPIN"
)

// latencySpin returns the duration BROKERLESS_LATENCY_SPIN names, 0 when
// it is not set.
func latencySpin(b *testing.B) time.Duration {
	v := os.Getenv(envSpin)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxSpin {
		b.Fatalf("%s=%q: want a duration in [0, 1s], such as 50us", envSpin, v)
	}
	return d
}

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

// latencyRun is what one side of a round measured.
type latencyRun struct {
	h    *latency.Histogram
	lost int // messages never received (raw UDP) or reported lost (a Gap)
}

// receiveLatency starts a sender process of the given kind and records
// the latency of the n messages it sends. Raw UDP has no repair: what
// its receiver's buffer drops is counted once the sender has exited and
// nothing more came for latencyIdle. Both receivers ask for the
// transport's default receive buffer.
func receiveLatency(b *testing.B, kind string, n, rate int) latencyRun {
	cfg := testConfig(b)
	spin := latencySpin(b)
	exited := make(chan struct{})
	var next func(ctx context.Context) (sent time.Time, lost int, err error)
	if kind == "raw" {
		rc := rawReceiver(b, cfg)
		bufferSizes(rc, DefaultSocketBytes, 0, slog.New(slog.DiscardHandler))
		buf := make([]byte, 2048)
		next = func(ctx context.Context) (time.Time, int, error) {
			for {
				if k, ok := spinRead(rc, buf, spin); ok && k == benchPayload {
					return time.Unix(0, int64(binary.BigEndian.Uint64(buf))), 0, nil
				} else if ok {
					continue
				}
				_ = rc.SetReadDeadline(time.Now().Add(latencyIdle))
				k, _, err := rc.ReadFromUDPAddrPort(buf)
				if errors.Is(err, os.ErrDeadlineExceeded) {
					select {
					case <-exited:
						return time.Time{}, 0, errSenderDone
					case <-ctx.Done():
						return time.Time{}, 0, ctx.Err()
					default:
						continue
					}
				}
				if err != nil || k == benchPayload {
					return time.Unix(0, int64(binary.BigEndian.Uint64(buf))), 0, err
				}
			}
		}
	} else {
		cfg.Spin = spin
		s := mustSub(b, cfg)
		next = func(ctx context.Context) (time.Time, int, error) {
			for {
				ev, err := s.Receive(ctx)
				switch {
				case err != nil:
					return time.Time{}, 0, err
				case ev.Kind == transport.EventMessage:
					return ev.Message.Time, 0, nil
				case ev.Kind == transport.EventGap:
					return time.Time{}, int(ev.Gap.Len()), nil
				}
			}
		}
	}
	stop := startSender(b, kind, cfg, n, rate, exited)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := latencyRun{h: latency.New()}
	for int(run.h.Count())+run.lost < n {
		sent, lost, err := next(ctx)
		if errors.Is(err, errSenderDone) {
			run.lost = n - int(run.h.Count())
			break
		}
		if err != nil {
			b.Fatalf("%s: after %d messages: %v", kind, run.h.Count(), err)
		}
		if lost > 0 {
			run.lost += lost
			continue
		}
		run.h.Record(time.Since(sent))
	}
	return run
}

// latencyPin returns the CPUs that BROKERLESS_LATENCY_PIN=R,S names for
// the receivers and the senders, ok false when it is not set.
func latencyPin() (recv, send int, ok bool, err error) {
	v := os.Getenv(envPin)
	if v == "" {
		return 0, 0, false, nil
	}
	r, s, found := strings.Cut(v, ",")
	recv, err1 := strconv.Atoi(r)
	send, err2 := strconv.Atoi(s)
	if !found || err1 != nil || err2 != nil || recv < 0 || send < 0 {
		return 0, 0, false, fmt.Errorf("%s=%q: want the receivers' CPU and the senders', such as 1,0", envPin, v)
	}
	return recv, send, true, nil
}

// startSender starts the sender process of kind (raw or mcast), to send
// n messages at rate to cfg's group and feed; exited is closed when it
// has exited. stop kills it and waits for it.
func startSender(b *testing.B, kind string, cfg Config, n, rate int, exited chan struct{}) (stop func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSender+"="+kind, envGroup+"="+cfg.Group.String(),
		envFeed+"="+strconv.Itoa(int(cfg.Feed)), envCount+"="+strconv.Itoa(n), envRate+"="+strconv.Itoa(rate))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(exited) }()
	return func() {
		_ = cmd.Process.Kill()
		<-exited
	}
}

// latencyIdle: a raw receiver that got nothing for this long after its
// sender exited has got all it will.
const latencyIdle = 100 * time.Millisecond

var errSenderDone = errors.New("sender exited and nothing more came")

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
	if _, send, ok, err := latencyPin(); err != nil {
		return err
	} else if ok {
		if err := pinProcess(send); err != nil {
			return err
		}
	}
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
