package logd

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// dialFrom connects to addr from the loopback address local (another
// client host, as far as logd can tell).
func dialFrom(t *testing.T, local, addr string) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// healthz returns /healthz's status and body.
func healthz(t *testing.T, s *Server) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	return rec.Code, rec.Body.String()
}

// TestPerIPLimitKeepsClientsIn is the lock-out from issue 14: one host
// opens more idle connections than the server takes. With a per-address
// limit it gets only its share; a client on another address is served,
// and /healthz stays ready (one address being held back is the limit
// working, not an outage).
func TestPerIPLimitKeepsClientsIn(t *testing.T) {
	const maxConns, perIP, attackers = 16, 4, 40
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxConnections, c.MaxConnectionsPerIP = maxConns, perIP
		c.RequestTimeout = time.Minute // the idle attackers stay until the test ends
	})
	for range attackers {
		if _, err := dialFrom(t, "127.0.0.2", ts.addr); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the attacker's connections accepted or refused", func() bool {
		return ts.metrics.connections.Load()+int64(ts.metrics.refusedPerIP.Load()+ts.metrics.refused.Load()) == attackers
	})
	if n := ts.metrics.connections.Load(); n != perIP {
		t.Fatalf("the attacker holds %d connections, want %d", n, perIP)
	}
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation(), kgo.DialTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("in")}).FirstErr(); err != nil {
		t.Fatalf("a client on another address was not served: %v", err)
	}
	if code, body := healthz(t, ts.Server); code != http.StatusOK {
		t.Fatalf("healthz %d %q while only the attacker is held back", code, body)
	}
}

// TestHealthzNotReadyWhileRefusing: once MaxConnections refuses a client,
// /healthz answers 503 naming the reason, for notReadyFor after the last
// refusal, then ok again.
func TestHealthzNotReadyWhileRefusing(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxConnections, c.MaxConnectionsPerIP = 2, 2
		c.RequestTimeout = time.Minute
		c.Now = clock.now
	})
	if code, body := healthz(t, ts.Server); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz %d %q before any refusal", code, body)
	}
	for range 3 {
		dial(t, ts.addr)
	}
	waitUntil(t, "a refusal", func() bool { return ts.metrics.refused.Load() == 1 })
	code, body := healthz(t, ts.Server)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "MaxConnections (2) reached") {
		t.Fatalf("healthz %d %q while refusing clients", code, body)
	}
	clock.add(notReadyFor - time.Millisecond)
	if code, _ := healthz(t, ts.Server); code != http.StatusServiceUnavailable {
		t.Fatalf("healthz %d just before the window ends", code)
	}
	clock.add(time.Millisecond)
	if code, body := healthz(t, ts.Server); code != http.StatusOK {
		t.Fatalf("healthz %d %q %v after the last refusal", code, body, notReadyFor)
	}
}

// TestSlowConnectionsClosed: a new connection that sends nothing, and
// one that trickles a request byte by byte, are closed at RequestTimeout;
// a connection that has been served may idle (up to IdleTimeout).
func TestSlowConnectionsClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ts := startServer(t, t.TempDir(), func(c *Config) { c.RequestTimeout = timeout })

	start := time.Now() // before the server accepts them
	silent := dial(t, ts.addr)
	slow := dial(t, ts.addr)
	served := dial(t, ts.addr)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // 1 byte every 20 ms of a 1000-byte request: 20 s to arrive
		defer wg.Done()
		header := binary.BigEndian.AppendUint32(nil, 1000)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			b := []byte{0}
			if i < len(header) {
				b[0] = header[i]
			}
			if _, err := slow.Write(b); err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)
	if _, err := rawRequest(t, served, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]net.Conn{"silent": silent, "slow": slow} {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) { // EOF, or a reset when bytes were left unread
			t.Fatalf("%s connection: read %v, want it closed", name, err)
		}
		if took := time.Since(start); took < timeout || took > timeout+3*time.Second {
			t.Fatalf("%s connection closed after %v, RequestTimeout %v", name, took, timeout)
		}
	}
	waitUntil(t, "slow connections counted", func() bool { return ts.metrics.slowRequests.Load() == 2 })
	_ = served.SetReadDeadline(time.Now().Add(3 * timeout))
	if _, err := served.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("a served connection idling for %v: read %v, want it still open", 3*timeout, err)
	}
}

// TestIdleConnectionsClosed: between requests, IdleTimeout applies.
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, t.TempDir(), func(c *Config) { c.IdleTimeout = idle })
	c := dial(t, ts.addr)
	if _, err := rawRequest(t, c, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read %v, want EOF", err)
	}
	if took := time.Since(start); took < idle/2 || took > idle+3*time.Second { // the server starts counting before the response reaches us
		t.Fatalf("idle connection closed after %v, IdleTimeout %v", took, idle)
	}
	waitUntil(t, "the idle close counted", func() bool { return ts.metrics.idleClosed.Load() == 1 })
}

// TestUnreadResponseNotIdle: a client that asks for a large fetch and
// never reads the answer is closed when the write times out, and that
// is not counted as an idle connection.
func TestUnreadResponseNotIdle(t *testing.T) {
	const idle = 500 * time.Millisecond
	ts := startServer(t, t.TempDir(), func(c *Config) { c.IdleTimeout = idle })
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 900<<10)
	const records = 32 // 28 MiB: more than the socket buffers hold
	for range records {
		cl.Produce(context.Background(), &kgo.Record{Topic: "big", Value: value}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	waitUntil(t, "the producer's connections closed", func() bool { return ts.metrics.connections.Load() == 0 })
	idleBefore := ts.metrics.idleClosed.Load()

	c := dial(t, ts.addr)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(4)
	req.ReplicaID, req.MaxBytes = -1, 64<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 64 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := writeRequest(c, kmsg.Fetch.Int16(), 4, req.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the unread connection closed", func() bool { return ts.metrics.connections.Load() == 0 })
	if n := ts.metrics.idleClosed.Load() - idleBefore; n != 0 {
		t.Fatalf("a connection closed for not reading its response counted as %d idle", n)
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// emfileListener fails its first Accepts as a process out of file
// descriptors does.
type emfileListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptOutOfFiles: when Accept fails for want of file descriptors,
// logd keeps serving (retrying with backoff), counts the failures and
// reports not ready meanwhile.
func TestAcceptOutOfFiles(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	srv, err := New(Config{Storage: storage.Config{Dir: t.TempDir()}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const fails = 4
	served := make(chan error, 1)
	go func() { served <- srv.Serve(&emfileListener{Listener: ln, fails: fails}) }()
	c := dial(t, ln.Addr().String())
	if _, err := rawRequest(t, c, kmsg.ApiVersions.Int16(), 0, nil); err != nil {
		select {
		case err := <-served:
			t.Fatalf("Serve returned %v", err)
		default:
		}
		t.Fatalf("not served after accept failures: %v", err)
	}
	if n := srv.metrics.acceptErrors.Load(); n != fails {
		t.Fatalf("%d accept errors counted, want %d", n, fails)
	}
	if code, body := healthz(t, srv); code != http.StatusServiceUnavailable || !strings.Contains(body, "too many open files") {
		t.Fatalf("healthz %d %q after accept failures", code, body)
	}
	clock.add(notReadyFor)
	if code, body := healthz(t, srv); code != http.StatusOK {
		t.Fatalf("healthz %d %q %v later", code, body, notReadyFor)
	}
}
