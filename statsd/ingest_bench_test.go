package statsd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/transport/peertest"
)

// BenchmarkIngest finds, for our server, for Etsy statsd 0.9.0 and for
// prometheus statsd_exporter 0.31.0 on the same machine in the same
// run, the highest rate of lines per second each aggregates with zero
// loss: every line sent is counted (in the counts flushed to Graphite,
// or on the exporter's /metrics page) and the kernel dropped nothing on
// the server's socket. The sender is another process (this test binary
// again) packing 20 counter lines per datagram, paced open-loop. Rates
// start at 25,000 lines/s, double until a rate loses, then bisect. A rate
// loses when two trials in a row at it lose: one stall of a loaded
// machine (a server not scheduled for longer than its buffer lasts) is
// not taken for the server's limit. Likewise a search ends at the
// sender's limit only when the sender falls 10% short of a rate twice in
// a row; once, it was not scheduled.
//
// Beside them runs the same search against a raw receiver
// (ingest_raw_test.go): a socket with our server's receive buffer, read
// as ours reads, that only counts lines. Its rate is the ceiling that
// the buffer and this machine put on any server; x-raw is ours against
// it.
//
// All servers get the same socket receive buffer, in two settings (one
// sub-benchmark each): the kernel's default (net.core.rmem_default; Etsy
// and the exporter ask for nothing, ours is told RecvBuffer -1), and 4
// MiB (ours' default; Etsy's socket gets setRecvBufferSize(4 MiB) from a
// script node loads first, the exporter --statsd.read-buffer). A third,
// "defaults", runs each server as it comes (ours asks for 4 MiB, the
// others for nothing): what a user gets without tuning. Each reports
// the SO_RCVBUF the sockets really have. The searches are
// interleaved trial by trial, the one to go first rotating, so a busy
// period of the machine hits all; a run is BROKERLESS_INGEST_ROUNDS such
// rounds (default 3). Each trial and each round are logged, with every
// side's kernel drops; the metrics are the medians of the rounds' maxima
// and of their ratios. The exporter is left out, with a message, when
// .ci/install.d/65-statsd-exporter.sh has not installed it (a failure
// under BROKERLESS_INTEROP=1).
//
//	BROKERLESS_INTEROP=1 go test -run XXX -bench Ingest -benchtime 1x -v ./statsd/
func BenchmarkIngest(b *testing.B) {
	rounds := 3
	if v := os.Getenv("BROKERLESS_INGEST_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BROKERLESS_INGEST_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}
	for _, setting := range []struct {
		name       string
		ours, peer int // RecvBuffer, and the size given to the peers' sockets (0: none)
	}{
		{"rcvbuf=default", -1, 0},
		{"rcvbuf=4MiB", 4 << 20, 4 << 20},
		{"defaults", 0, 0},
	} {
		same := setting.name != "defaults" // the sockets must have the same buffer
		b.Run(setting.name, func(b *testing.B) {
			ourSink, etsySink := newGraphiteSink(b), newGraphiteSink(b)
			g, err := NewGraphite(GraphiteConfig{Address: ourSink.ln.Addr().String()})
			if err != nil {
				b.Fatal(err)
			}
			cfg := Config{Backends: []Backend{g}, RecvBuffer: setting.ours}
			cfg.FlushInterval = time.Second
			s := startServer(b, cfg)
			ourRcvbuf := 2 * recvBuffer(s.udp[0].conn) // what getsockopt says, as for Etsy's
			e := startEtsy(b, map[string]any{"flushInterval": 1000, "graphiteHost": "127.0.0.1", "graphitePort": etsySink.port()},
				setting.peer)
			if same && e.rcvbuf != ourRcvbuf {
				b.Fatalf("SO_RCVBUF: ours %d, Etsy's %d: not the same", ourRcvbuf, e.rcvbuf)
			}
			rawBuf := 0 // the stick gets our socket's buffer
			if setting.ours != -1 {
				rawBuf = recvBuffer(s.udp[0].conn)
			}
			raw := startRaw(b, rawBuf)
			if raw.rcvbuf != ourRcvbuf {
				b.Fatalf("SO_RCVBUF: ours %d, the raw receiver's %d: not the same", ourRcvbuf, raw.rcvbuf)
			}
			var x *exporter
			if _, err := os.Stat(exporterPath()); err == nil {
				x = startExporter(b, setting.peer)
				if same && x.rcvbuf != ourRcvbuf {
					b.Fatalf("SO_RCVBUF: ours %d, statsd_exporter's %d: not the same", ourRcvbuf, x.rcvbuf)
				}
			} else {
				peertest.Without(b, "prometheus statsd_exporter "+exporterVersion+", not found at "+exporterPath(),
					peertest.Script("65-statsd-exporter.sh"), "measuring without it")
			}
			if same {
				b.Logf("SO_RCVBUF of every socket: %d bytes", ourRcvbuf)
			} else {
				b.Logf("SO_RCVBUF: ours %d bytes, Etsy's %d", ourRcvbuf, e.rcvbuf)
				if x != nil {
					b.Logf("SO_RCVBUF: statsd_exporter's %d bytes", x.rcvbuf)
				}
			}
			var oursMax, etsyMax, xMax, rawMax, ratios, xRatios, rawRatios []float64
			for r := range rounds {
				ours := &zeroLossSearch{who: "ours", port: s.UDPAddrs()[0].(*net.UDPAddr).Port, counter: &flushCounter{sink: ourSink}}
				etsy := &zeroLossSearch{who: "etsy", port: e.port, counter: &flushCounter{sink: etsySink}}
				rs := &zeroLossSearch{who: "raw", port: raw.port, counter: &rawCounter{r: raw}}
				searches := []*zeroLossSearch{ours, etsy, rs}
				var xs *zeroLossSearch
				if x != nil {
					xs = &zeroLossSearch{who: "exporter", port: x.port, counter: &scrapeCounter{e: x}}
					searches = append(searches, xs)
				}
				for i := r; !allDone(searches); i++ {
					for j := range searches {
						searches[(i+j)%len(searches)].step(b)
					}
				}
				b.Logf("round %d: ours %.0f lines/s, Etsy %.0f lines/s: %.2f× Etsy; first rate over: ours %d, Etsy %d kernel drops; "+
					"kernel drops in the round: ours %d datagrams in %d trials, Etsy %d in %d",
					r+1, ours.lo, etsy.lo, ours.lo/etsy.lo, ours.overDrops, etsy.overDrops, ours.drops, ours.trials, etsy.drops, etsy.trials)
				oursMax, etsyMax, ratios = append(oursMax, ours.lo), append(etsyMax, etsy.lo), append(ratios, ours.lo/etsy.lo)
				b.Logf("round %d: raw receiver %.0f lines/s: ours %.2f× raw, Etsy %.2f× raw; first rate over: %d kernel drops; "+
					"kernel drops in the round: %d datagrams in %d trials",
					r+1, rs.lo, ours.lo/rs.lo, etsy.lo/rs.lo, rs.overDrops, rs.drops, rs.trials)
				rawMax, rawRatios = append(rawMax, rs.lo), append(rawRatios, ours.lo/rs.lo)
				if xs != nil {
					b.Logf("round %d: statsd_exporter %.0f lines/s: ours %.2f× the exporter; first rate over: %d kernel drops; "+
						"kernel drops in the round: %d datagrams in %d trials",
						r+1, xs.lo, ours.lo/xs.lo, xs.overDrops, xs.drops, xs.trials)
					xMax, xRatios = append(xMax, xs.lo), append(xRatios, ours.lo/xs.lo)
				}
			}
			b.ReportMetric(median(oursMax), "ours-lines/s")
			b.ReportMetric(median(etsyMax), "etsy-lines/s")
			b.ReportMetric(median(ratios), "x-etsy")
			b.ReportMetric(median(rawMax), "raw-lines/s")
			b.ReportMetric(median(rawRatios), "x-raw")
			if x != nil {
				b.ReportMetric(median(xMax), "exporter-lines/s")
				b.ReportMetric(median(xRatios), "x-exporter")
			}
			b.ReportMetric(float64(ourRcvbuf), "rcvbuf-bytes")
			if !same {
				b.ReportMetric(float64(e.rcvbuf), "etsy-rcvbuf-bytes")
				if x != nil {
					b.ReportMetric(float64(x.rcvbuf), "exporter-rcvbuf-bytes")
				}
			}
		})
	}
}

func allDone(searches []*zeroLossSearch) bool {
	for _, z := range searches {
		if !z.done {
			return false
		}
	}
	return true
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

const (
	benchLinesPerDatagram = 20
	benchKeys             = 100
	benchTrial            = 2 * time.Second
	benchMaxTrials        = 16
)

// zeroLossSearch looks for a server's highest zero-loss rate, one trial
// per step: lo is the highest rate achieved without loss, hi the lowest
// offered that lost twice in a row, overDrops the kernel drops of its
// second trial.
type zeroLossSearch struct {
	who       string
	port      int
	counter   ingestCounter
	rate      float64 // offered at the next step
	lo, hi    float64
	overDrops uint64
	// drops are the kernel drops of every trial so far.
	drops  uint64
	trials int
	retry  bool // the last trial lost: the next one repeats its rate
	short  bool // the last trial's sender fell short of the rate: the next one repeats it
	done   bool
}

func (z *zeroLossSearch) step(b *testing.B) {
	if z.done {
		return
	}
	if z.rate == 0 {
		z.rate = 25_000
	}
	tr := ingestTrial(b, z.port, z.counter, z.rate)
	z.trials++
	z.drops += tr.drops
	ok := tr.lost == 0 && tr.drops == 0
	b.Logf("%s: offered %8.0f lines/s, sent %8d at %8.0f/s, aggregated %8d, lost %7d, kernel drops %6d datagrams: %s",
		z.who, z.rate, tr.sent, tr.achieved, tr.sent-tr.lost, tr.lost, tr.drops, map[bool]string{true: "zero loss", false: "LOSS"}[ok])
	switch {
	case ok:
		z.retry = false
		z.lo = max(z.lo, tr.achieved)
		if tr.achieved < 0.9*z.rate {
			// The sender fell short: the limit when it does so twice in
			// a row at a rate, else a stall of the loaded machine.
			z.done = z.short || z.trials >= benchMaxTrials
			z.short = true
			return
		}
		z.short = false
	case !z.retry:
		z.retry, z.short = true, false // once more at this rate
		if z.trials >= benchMaxTrials {
			z.done = true
		}
		return
	default:
		z.retry, z.short = false, false
		if z.hi == 0 || z.rate < z.hi {
			z.hi, z.overDrops = z.rate, tr.drops
		}
	}
	switch {
	case z.trials >= benchMaxTrials:
		z.done = true
	case z.hi == 0:
		z.rate *= 2
	case z.lo > 0 && z.hi/z.lo < 1.1:
		z.done = true
	case z.lo == 0:
		z.rate /= 2
	default:
		z.rate = (z.lo + z.hi) / 2
	}
}

type trialResult struct {
	sent, lost, drops uint64
	achieved          float64
}

// ingestTrial sends benchTrial's worth of datagrams at rate lines/s to
// port and counts what the server aggregated of them.
func ingestTrial(b *testing.B, port int, counter ingestCounter, rate float64) trialResult {
	counter.start(b)
	drops0 := PortDrops(port)
	datagrams := int(rate / benchLinesPerDatagram * benchTrial.Seconds())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envIngestSender+"="+fmt.Sprintf("127.0.0.1:%d,%v,%d", port, rate, datagrams))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("sender: %v", err)
	}
	elapsed, err := time.ParseDuration(strings.TrimSpace(string(out)))
	if err != nil {
		b.Fatalf("sender said %q", out)
	}
	sent := uint64(datagrams * benchLinesPerDatagram)
	got := counter.counted(b)
	return trialResult{sent: sent, lost: sent - min(got, sent), drops: PortDrops(port).Since(drops0),
		achieved: float64(sent) / elapsed.Seconds()}
}

// ingestCounter counts the benchmark's lines a server aggregated during
// a trial: start is called before the trial is sent, counted after.
type ingestCounter interface {
	start(b *testing.B)
	counted(b *testing.B) uint64
}

// flushCounter counts from the flushes a server sends to a Graphite
// sink (ours, Etsy's).
type flushCounter struct{ sink *graphiteSink }

func (c *flushCounter) start(*testing.B) { drain(c.sink) }

// counted sums the flushes until two in a row add nothing.
func (c *flushCounter) counted(b *testing.B) uint64 {
	var got uint64
	for quiet := 0; quiet < 2; {
		f, _ := c.sink.next(b, "server")
		n := benchCount(f)
		got += n
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return got
}

// scrapeCounter counts from statsd_exporter's /metrics page, whose
// counters only grow.
type scrapeCounter struct {
	e    *exporter
	base uint64
}

func (c *scrapeCounter) start(b *testing.B) { c.base = c.scrape(b) }

// counted scrapes until the total has not moved for 3 scrapes 100 ms
// apart: the exporter works through its queue of datagrams after the
// sender is done.
func (c *scrapeCounter) counted(b *testing.B) uint64 {
	return untilStill(func() uint64 { return c.scrape(b) }, 3, 100*time.Millisecond) - c.base
}

// untilStill reads a growing count until it has not moved for looks
// reads gap apart, and returns it: a queue draining elsewhere, with no
// event to wait on.
func untilStill(read func() uint64, looks int, gap time.Duration) uint64 {
	last, same := read(), 0
	for same < looks {
		time.Sleep(gap)
		n := read()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

func (c *scrapeCounter) scrape(b *testing.B) uint64 {
	n, err := c.e.total()
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func drain(sink *graphiteSink) {
	for {
		select {
		case <-sink.flushes:
		default:
			return
		}
	}
}

// benchCount adds up the counts of the benchmark's keys in a flush.
func benchCount(f map[string]string) uint64 {
	var n uint64
	for name, v := range f {
		if strings.HasPrefix(name, "stats_counts.bench.") {
			c, _ := strconv.ParseFloat(v, 64)
			n += uint64(c)
		}
	}
	return n
}

// envIngestSender makes the test binary a sender: "addr,rate,datagrams".
const envIngestSender = "BROKERLESS_STATSD_INGEST_SENDER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envIngestSender); spec != "" {
		elapsed, err := runIngestSender(spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(elapsed)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runIngestSender sends datagrams of 20 counter lines at the given
// line rate, in batches of up to 32 (sendmmsg), on an open-loop
// schedule, and returns how long it took.
func runIngestSender(spec string) (time.Duration, error) {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return 0, fmt.Errorf("bad sender spec %q", spec)
	}
	rate, err1 := strconv.ParseFloat(parts[1], 64)
	n, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad sender spec %q", spec)
	}
	c, err := net.Dial("udp4", parts[0])
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.(*net.UDPConn).SetWriteBuffer(4 << 20)
	p := ipv4.NewPacketConn(c.(*net.UDPConn))
	const batch = 32
	ms := make([]ipv4.Message, batch)
	for i := range ms {
		var pkt []byte
		for l := 0; l < benchLinesPerDatagram; l++ {
			pkt = fmt.Appendf(pkt, "bench.k%02d:1|c\n", (i*benchLinesPerDatagram+l)%benchKeys)
		}
		ms[i].Buffers = [][]byte{pkt[:len(pkt)-1]}
	}
	period := time.Duration(float64(time.Second) * benchLinesPerDatagram / rate)
	start := time.Now()
	for sent := 0; sent < n; {
		due := min(n, int(time.Since(start)/period)+1)
		if due <= sent {
			continue // spin: timers here are too coarse for these rates
		}
		k, err := p.WriteBatch(ms[:min(batch, due-sent)], 0)
		if err != nil {
			return 0, err
		}
		sent += k
	}
	return time.Since(start), nil
}
