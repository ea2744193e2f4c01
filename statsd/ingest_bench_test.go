package statsd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// BenchmarkIngest finds, for our server and for Etsy statsd 0.9.0 on
// the same machine in the same run, the highest rate of lines per
// second each aggregates with zero loss: every line sent is in the
// counts flushed to Graphite and the kernel dropped nothing on the
// server's socket. The sender is another process (this test binary
// again) packing 20 counter lines per datagram, paced open-loop. Rates
// start at 25,000 lines/s, double until a trial loses, then bisect.
// Each trial's figures are logged; the run reports both maxima and
// their ratio.
//
//	BROKERLESS_INTEROP=1 go test -run XXX -bench Ingest -benchtime 1x -v ./statsd/
func BenchmarkIngest(b *testing.B) {
	ourSink, etsySink := newGraphiteSink(b), newGraphiteSink(b)
	g, err := NewGraphite(GraphiteConfig{Address: ourSink.ln.Addr().String()})
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Backends: []Backend{g}}
	cfg.FlushInterval = time.Second
	s := startServer(b, cfg)
	ourPort := s.UDPAddrs()[0].(*net.UDPAddr).Port
	e := startEtsy(b, map[string]any{"flushInterval": 1000, "graphiteHost": "127.0.0.1", "graphitePort": etsySink.port()})

	ours := maxZeroLoss(b, "ours", ourPort, ourSink)
	etsy := maxZeroLoss(b, "etsy", e.port, etsySink)
	b.ReportMetric(ours.rate, "ours-lines/s")
	b.ReportMetric(etsy.rate, "etsy-lines/s")
	b.ReportMetric(ours.rate/etsy.rate, "x-etsy")
	b.ReportMetric(float64(ours.overDrops), "ours-drops-over")
	b.ReportMetric(float64(etsy.overDrops), "etsy-drops-over")
}

// searchResult is a server's highest zero-loss rate, and the kernel
// drops of the first rate over it (0 if the sender could not go
// faster).
type searchResult struct {
	rate      float64
	overDrops uint64
}

const (
	benchLinesPerDatagram = 20
	benchKeys             = 100
	benchTrial            = 2 * time.Second
)

func maxZeroLoss(b *testing.B, who string, port int, sink *graphiteSink) searchResult {
	lo, hi := 0.0, 0.0 // highest rate without loss, lowest with
	var res searchResult
	rate := 25_000.0
	for i := 0; i < 12; i++ {
		tr := ingestTrial(b, port, sink, rate)
		ok := tr.lost == 0 && tr.drops == 0
		b.Logf("%s: offered %8.0f lines/s, sent %8d at %8.0f/s, aggregated %8d, lost %7d, kernel drops %6d datagrams: %s",
			who, rate, tr.sent, tr.achieved, tr.sent-tr.lost, tr.lost, tr.drops, map[bool]string{true: "zero loss", false: "LOSS"}[ok])
		if ok {
			lo = max(lo, tr.achieved)
			if tr.achieved < 0.9*rate { // the sender is the limit
				break
			}
		} else if hi == 0 || rate < hi {
			hi, res.overDrops = rate, tr.drops
		}
		switch {
		case hi == 0:
			rate *= 2
		case hi/lo < 1.1:
			i = 99
		default:
			rate = (lo + hi) / 2
		}
	}
	res.rate = lo
	return res
}

type trialResult struct {
	sent, lost, drops uint64
	achieved          float64
}

// ingestTrial sends benchTrial's worth of datagrams at rate lines/s to
// port and counts what the flushes to sink add up to.
func ingestTrial(b *testing.B, port int, sink *graphiteSink, rate float64) trialResult {
	drain(sink)
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
	// Sum the flushes until two in a row add nothing.
	var got uint64
	for quiet := 0; quiet < 2; {
		f, _ := sink.next(b, "server")
		n := benchCount(f)
		got += n
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	return trialResult{sent: sent, lost: sent - min(got, sent), drops: PortDrops(port) - drops0,
		achieved: float64(sent) / elapsed.Seconds()}
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
