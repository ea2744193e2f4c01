package statsd

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// snapshotValues flattens a snapshot into "kind key[.stat]" → value.
func snapshotValues(s *Snapshot) map[string]float64 {
	m := map[string]float64{}
	for _, c := range s.Counters {
		m["c "+c.Key] = c.Count
	}
	for _, g := range s.Gauges {
		m["g "+g.Key] = g.Value
	}
	for _, t := range s.Timers {
		for _, st := range t.Stats {
			m["t "+t.Key+"."+st.Name] = st.Value
		}
	}
	for _, st := range s.Sets {
		m["s "+st.Key] = float64(st.Count)
	}
	return m
}

func checkValues(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
}

// TestPythonStatsdClient has Debian's python3-statsd, a client from
// outside the project, send to the server over UDP and TCP.
func TestPythonStatsdClient(t *testing.T) {
	python := peertest.PythonModule(t, "statsd", "apt-get install python3-statsd (.ci/install.d/40-statsd.sh)")
	cfg := Config{UDP: []string{"127.0.0.1:0"}, TCP: []string{"127.0.0.1:0"}}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	udp, tcp := s.UDPAddrs()[0].(*net.UDPAddr), s.TCPAddrs()[0].(*net.TCPAddr)
	script := fmt.Sprintf(`
import statsd
c = statsd.StatsClient('127.0.0.1', %d, prefix='py')
c.incr('hits')
c.incr('hits', 4)
c.decr('hits', 2)
c.gauge('temp', 20)
c.gauge('temp', 2.5, delta=True)
c.gauge('temp', -1, delta=True)
c.timing('lat', 12.5)
c.timing('lat', 7)
c.set('users', 'alice')
c.set('users', 'bob')
c.set('users', 'alice')
with c.pipeline() as p:
    p.incr('piped', 3)
    p.timing('lat', 30)
t = statsd.TCPStatsClient('127.0.0.1', %d, prefix='py')
t.incr('tcp', 7)
t.close()
`, udp.Port, tcp.Port)
	cmd := exec.Command(python, "-I", "-c", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	waitReceived(t, s, 0, 14)
	got := snapshotValues(s.Flush(context.Background()))
	checkValues(t, got, map[string]float64{
		"c py.hits": 3, "c py.piped": 3, "c py.tcp": 7, "g py.temp": 21.5,
		"t py.lat.count": 3, "t py.lat.mean": 49.5 / 3, "t py.lat.upper": 30, "t py.lat.lower": 7,
		"s py.users": 2, "c statsd.bad_lines_seen": 0,
	})
}

// TestTCPLines: lines split across writes are joined; a line over
// MaxLineLength is dropped and counted; the lines after it still count.
func TestTCPLines(t *testing.T) {
	cfg := Config{TCP: []string{"127.0.0.1:0"}, MaxLineLength: 64}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	c, err := net.Dial("tcp", s.TCPAddrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"a:1|", "c\nb:2", "|c\nlong:", strings.Repeat("9", 200), "|c\nc:3|c\n"} {
		if _, err := c.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	waitReceived(t, s, 0, 4)
	snap := s.Flush(context.Background())
	checkValues(t, snapshotValues(snap), map[string]float64{"c a": 1, "c b": 2, "c c": 3, "c statsd.bad_lines_seen": 1})
	if n := snap.Server.Listen.LinesTooLong; n != 1 {
		t.Errorf("LinesTooLong = %d, want 1", n)
	}
}

func TestUnixgramAndRepeater(t *testing.T) {
	// The repeater forwards to a second server.
	downCfg := Config{}
	downCfg.FlushInterval = time.Hour
	down := startServer(t, downCfg)
	rep, err := NewRepeater(context.Background(), RepeaterConfig{Targets: []string{down.UDPAddrs()[0].String()}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "statsd.sock")
	cfg := Config{Unixgram: []string{path}, Backends: []Backend{rep}}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("u.hits:2|c\nu.lat:5|ms")); err != nil {
		t.Fatal(err)
	}
	waitReceived(t, s, 1, 2)
	checkValues(t, snapshotValues(s.Flush(context.Background())), map[string]float64{"c u.hits": 2, "t u.lat.count": 1})
	waitReceived(t, down, 1, 2)
	checkValues(t, snapshotValues(down.Flush(context.Background())), map[string]float64{"c u.hits": 2, "t u.lat.count": 1})
}

// TestSequenceLoss: a client numbering its packets, with two packets
// missing, is reported with two lost.
func TestSequenceLoss(t *testing.T) {
	cfg := Config{}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	var packets []string
	for seq := uint64(1); seq <= 100; seq++ {
		if seq == 10 || seq == 11 {
			continue
		}
		packets = append(packets, string(AppendSeqLine(nil, "web-1", seq))+"\nx:1|c")
	}
	sendUDP(t, s.UDPAddrs()[0].String(), packets...)
	waitReceived(t, s, 98, 2*98)
	snap := s.Flush(context.Background())
	if len(snap.Server.Clients) != 1 {
		t.Fatalf("clients %+v", snap.Server.Clients)
	}
	if c := snap.Server.Clients[0]; c.ID != "web-1" || c.Received != 98 || c.Lost != 2 {
		t.Errorf("client %+v, want 98 received and 2 lost", c)
	}
	if snap.Server.SeqLines != 98 || snapshotValues(snap)["c statsd.bad_lines_seen"] != 0 || snapshotValues(snap)["c x"] != 98 {
		t.Errorf("seq lines %d, values %v", snap.Server.SeqLines, snapshotValues(snap))
	}
}

// TestMillionKeysAgainstTheCap sends 1,000,000 unique keys through the
// parser and aggregator with MaxKeys 10,000: the keys beyond are
// counted, and memory stays bounded.
func TestMillionKeysAgainstTheCap(t *testing.T) {
	const total, limit = 1_000_000, 10_000
	a := mustAggregator(t, AggregatorConfig{MaxKeys: limit})
	b := newBatch(false)
	var before, after runtime.MemStats
	fill := func(from, to int) {
		pkt := make([]byte, 0, 1500)
		for i := from; i < to; i++ {
			pkt = fmt.Appendf(pkt, "cardinality.explosion.user_%d:1|c\n", i)
			if len(pkt) > 1400 || i == to-1 {
				b.addPacket(pkt)
				b.applyTo(a)
				pkt = pkt[:0]
			}
		}
	}
	fill(0, limit) // the keys that fit
	runtime.GC()
	runtime.ReadMemStats(&before)
	fill(limit, total)
	runtime.GC()
	runtime.ReadMemStats(&after)
	snap := a.Flush(t0)
	if d := snap.Server.Dropped.Keys; d != total-limit {
		t.Errorf("rejected %d keys, want %d", d, total-limit)
	}
	if n := len(snap.Counters); n != limit+3 {
		t.Errorf("%d counters, want %d and Etsy's 3", n, limit)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Errorf("heap grew %d bytes over 990,000 rejected keys", grew)
	}
	t.Logf("heap %d MiB with %d keys held, %+d bytes after %d rejected", after.HeapAlloc>>20, limit,
		int64(after.HeapAlloc)-int64(before.HeapAlloc), total-limit)
}

// funcBackend is a Backend that calls flush.
type funcBackend struct {
	name  string
	flush func(ctx context.Context, s *Snapshot) error
}

func (b funcBackend) Name() string                                 { return b.name }
func (b funcBackend) Flush(ctx context.Context, s *Snapshot) error { return b.flush(ctx, s) }

// TestServerSlowBackendDelaysNoOther: a backend that takes its time (a
// logd or a Carbon that does not answer) does not hold back the other
// backends of the flush.
func TestServerSlowBackendDelaysNoOther(t *testing.T) {
	release, called := make(chan struct{}), make(chan struct{}, 1)
	slow := funcBackend{"slow", func(ctx context.Context, _ *Snapshot) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	fast := funcBackend{"fast", func(context.Context, *Snapshot) error {
		select {
		case called <- struct{}{}:
		default:
		}
		return nil
	}}
	cfg := Config{Backends: []Backend{slow, fast}, BackendTimeout: time.Hour}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	flushed := make(chan struct{})
	go func() {
		s.Flush(context.Background())
		close(flushed)
	}()
	select {
	case <-called:
	case <-time.After(10 * time.Second):
		t.Error("the second backend was not called while the first was busy")
	}
	close(release)
	<-flushed
}

// TestServeBackendsEndByNextFlush: Serve gives the backends of a flush
// until the next flush at most, whatever BackendTimeout, and flushes on
// every tick of the interval's grid: a slow backend never delays nor
// skips a flush, so every interval is FlushInterval long, as the rates
// (count / FlushInterval, Etsy's) assume.
func TestServeBackendsEndByNextFlush(t *testing.T) {
	const interval = 200 * time.Millisecond
	type call struct {
		at, deadline time.Time
		ok           bool
	}
	calls, stop := make(chan call, 16), make(chan struct{})
	slow := funcBackend{"slow", func(ctx context.Context, s *Snapshot) error {
		dl, ok := ctx.Deadline()
		select {
		case calls <- call{s.Time, dl, ok}:
		default:
		}
		select {
		case <-ctx.Done():
		case <-stop:
		}
		return ctx.Err()
	}}
	cfg := Config{Backends: []Backend{slow}, BackendTimeout: time.Hour}
	cfg.FlushInterval = interval
	startServer(t, cfg)
	t.Cleanup(func() { close(stop) }) // before the server's final flush
	var prev time.Time
	for i := range 3 {
		var c call
		select {
		case c = <-calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("flush %d did not come", i)
		}
		switch {
		case !c.ok || c.deadline.Sub(c.at) > interval:
			t.Fatalf("flush %d at %v: backend deadline %v (set %v), want by the next flush, %v later at most",
				i, c.at, c.deadline, c.ok, interval)
		case c.deadline.UnixMilli()%interval.Milliseconds() != 0:
			t.Fatalf("flush %d: backend deadline %v is not a tick of the flush grid", i, c.deadline)
		case i > 0 && c.deadline.Sub(prev) != interval:
			t.Fatalf("flush %d: deadline %v, %v after the previous flush's: a tick was skipped", i, c.deadline, c.deadline.Sub(prev))
		}
		prev = c.deadline
	}
}
