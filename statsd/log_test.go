package statsd

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/transport/kafka"
)

// startLogd runs logd in the process over a temporary directory and
// returns its address and a function that stops it (also called when the
// test ends).
func startLogd(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), serveLogd(t, t.TempDir(), ln)
}

// serveLogd runs logd over dir on ln and returns a function that stops
// it (also called when the test ends).
func serveLogd(t *testing.T, dir string, ln net.Listener) func() {
	t.Helper()
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: dir}})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return func() { srv.Close() }
}

// logServer is a Server whose only backend is a Log writing to topic of
// the logd at addr, serving TCP until the test ends or stop is called;
// opts change the publisher's configuration.
func logServer(t *testing.T, addr, topic string, timeout time.Duration, opts ...func(*kafka.Config)) (s *Server, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	kcfg := kafka.Config{Brokers: []string{addr}, Topic: topic}
	for _, o := range opts {
		o(&kcfg)
	}
	pub, err := kafka.NewPublisher(ctx, kcfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLog(LogConfig{Publisher: pub, Name: "kafka"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{TCP: []string{"127.0.0.1:0"}, Backends: []Backend{l}, BackendTimeout: timeout}
	cfg.FlushInterval = time.Hour
	s, err = NewServer(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return s, stop
}

func sendTCP(t *testing.T, s *Server, text string) {
	t.Helper()
	c, err := net.Dial("tcp", s.TCPAddrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
}

// readTopic reads n records of topic with a plain Kafka client.
func readTopic(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d of %d records read: %v", len(recs), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	return recs
}

// TestLogBackend: two flushes of a server whose backend is a Log into a
// topic of a real logd, read back with a plain Kafka client: one record
// a metric, in the order flushed, each the console's line for it (the
// two flushes' console output, line for line), keyed by the metric's
// key, stamped with its flush's time; no backend error.
func TestLogBackend(t *testing.T) {
	addr, _ := startLogd(t)
	s, _ := logServer(t, addr, "metrics", 10*time.Second)
	var want bytes.Buffer
	var times []time.Time
	flush := func(text string, lines int) {
		sendTCP(t, s, text)
		waitReceived(t, s, 0, lines)
		snap := s.Flush(context.Background())
		if n := snap.Server.BackendErrors["kafka"]; n != 0 {
			t.Fatalf("%d backend errors", n)
		}
		before := want.Len()
		if err := NewConsole(&want, ConsoleConfig{}).Flush(context.Background(), snap); err != nil {
			t.Fatal(err)
		}
		for range strings.Count(want.String()[before:], "\n") {
			times = append(times, snap.Time)
		}
	}
	flush("api.hits:3|c|#env:prod\nlatency:5|ms\nlatency:7|ms\nusers:ann|s\ntemp:21.5|g\n", 5)
	flush("api.hits:4|c|#env:prod\n", 6)
	lines := strings.SplitAfter(want.String(), "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != 8 {
		t.Fatalf("only %d console lines:\n%s", len(lines), want.String())
	}
	recs := readTopic(t, addr, "metrics", len(lines))
	for i, r := range recs {
		if got := string(r.Value) + "\n"; got != lines[i] {
			t.Errorf("record %d: %s want %s", i, got, lines[i])
		}
		if key := `"key":"` + string(r.Key) + `"`; !strings.Contains(lines[i], key) {
			t.Errorf("record %d: key %q, line %s", i, r.Key, lines[i])
		}
		if !r.Timestamp.Equal(times[i].Truncate(time.Millisecond)) {
			t.Errorf("record %d: time %v, want the flush's %v", i, r.Timestamp, times[i])
		}
	}
	if got := string(recs[4].Value); !strings.Contains(got, `"key":"api.hits;env=prod","values":{"count":4,`) {
		t.Errorf("the second flush's counter: %s", got)
	}
}

// TestLogBackendDown: a flush the log does not accept (its logd stopped)
// fails within the backend timeout and is counted as the backend's
// error; the lines the publisher could not take (its buffer of one
// record full) are counted as lost.
func TestLogBackendDown(t *testing.T) {
	addr, stop := startLogd(t)
	s, _ := logServer(t, addr, "metrics", 300*time.Millisecond, func(c *kafka.Config) { c.MaxBuffered = 1 })
	sendTCP(t, s, "a:1|c\nb:1|c\nc:1|c\n")
	waitReceived(t, s, 0, 3)
	if snap := s.Flush(context.Background()); snap.Server.BackendErrors["kafka"] != 0 {
		t.Fatalf("backend errors %v before logd stopped", snap.Server.BackendErrors)
	}
	stop()
	// Three lines a flush: the first waits in the buffer, the two
	// others are lost; at the next flush all three are.
	snap := s.Flush(context.Background())
	if snap.Server.BackendLinesLost["kafka"] != 0 {
		t.Fatalf("lines lost %v before logd stopped", snap.Server.BackendLinesLost)
	}
	snap = s.Flush(context.Background())
	if snap.Server.BackendErrors["kafka"] != 1 || snap.Server.BackendLinesLost["kafka"] != 2 {
		t.Fatalf("after a flush to a stopped logd: backend errors %v, lines lost %v, want kafka 1 and 2",
			snap.Server.BackendErrors, snap.Server.BackendLinesLost)
	}
	if snap = s.Flush(context.Background()); snap.Server.BackendLinesLost["kafka"] != 3 {
		t.Fatalf("after a second flush to a stopped logd: lines lost %v, want kafka 3", snap.Server.BackendLinesLost)
	}
	stats := map[string]float64{}
	for _, st := range snap.SelfStats() {
		stats[st.Name] = st.Value
	}
	if stats["server.backend_lines_lost.kafka"] != 3 {
		t.Errorf("self stats: server.backend_lines_lost.kafka = %v, want 3", stats["server.backend_lines_lost.kafka"])
	}
}

// unbufferedHook tells of each record the client gave up on.
type unbufferedHook chan error

func (h unbufferedHook) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if err != nil {
		h <- err
	}
}

// TestLogLateFailure: the lines of a flush that gave up waiting (logd
// down) and fail later (the client's delivery timeout) are that flush's
// loss, counted as lost lines; the next flush, logd back, is published
// whole, with no backend error.
func TestLogLateFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, dir := ln.Addr().String(), t.TempDir()
	stop := serveLogd(t, dir, ln)
	failed := make(unbufferedHook, 100)
	s, stopServer := logServer(t, addr, "metrics", 10*time.Second, func(c *kafka.Config) {
		// Records time out after 3 s, also in flight; the client
		// retries every 50 ms, so it is back soon after logd.
		c.Options = []kgo.Opt{kgo.RecordDeliveryTimeout(3 * time.Second), kgo.AllowIdempotentProduceCancellation(),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(50 * time.Millisecond), kgo.WithHooks(failed)}
	})
	sendTCP(t, s, "a:1|c\nb:1|c\n")
	waitReceived(t, s, 0, 2)
	if snap := s.Flush(context.Background()); snap.Server.BackendErrors["kafka"] != 0 {
		t.Fatalf("backend errors %v before logd stopped", snap.Server.BackendErrors)
	}
	stop()
	// Flush 1 gives up waiting; its two lines fail seconds later.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	s.Flush(ctx)
	cancel()
	for range 2 {
		select {
		case <-failed:
		case <-time.After(10 * time.Second):
			t.Fatal("the client never failed the records of the flush to a stopped logd")
		}
	}
	if ln, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	serveLogd(t, dir, ln)
	defer stopServer() // before logd stops
	sendTCP(t, s, "a:5|c\n")
	waitReceived(t, s, 0, 3)
	snap := s.Flush(context.Background()) // flush 2
	if n := snap.Server.BackendErrors["kafka"]; n != 1 {
		t.Errorf("flush 1's backend errors: %d, want 1", n)
	}
	lost := snap.Server.BackendLinesLost["kafka"]
	snap = s.Flush(context.Background()) // flush 3
	if n := snap.Server.BackendErrors["kafka"]; n != 0 {
		t.Fatalf("flush 2, logd back: %d backend errors, want 0", n)
	}
	lost += snap.Server.BackendLinesLost["kafka"]
	if lost != 2 {
		t.Errorf("%d lines lost, want flush 1's 2", lost)
	}
	// Flushes 0, 2 and 3, two lines each.
	recs := readTopic(t, addr, "metrics", 6)
	if a, b := string(recs[2].Value), string(recs[3].Value); !strings.Contains(a+b, `"key":"a","values":{"count":5,`) {
		t.Errorf("flush 2's lines: %s, %s", a, b)
	}
}

func TestLogConfig(t *testing.T) {
	_, err := NewLog(LogConfig{})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Log.Publisher" {
		t.Fatalf("NewLog without a publisher: %v", err)
	}
}
