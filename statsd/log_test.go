package statsd

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
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
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), func() { srv.Close() }
}

// logServer is a Server whose only backend is a Log writing to topic of
// the logd at addr, serving TCP until the test ends.
func logServer(t *testing.T, addr, topic string, timeout time.Duration) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pub, err := kafka.NewPublisher(ctx, kafka.Config{Brokers: []string{addr}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLog(LogConfig{Publisher: pub, Name: "kafka"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{TCP: []string{"127.0.0.1:0"}, Backends: []Backend{l}, BackendTimeout: timeout}
	cfg.FlushInterval = time.Hour
	s, err := NewServer(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
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
	s := logServer(t, addr, "metrics", 10*time.Second)
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
// fails within the backend timeout and is counted as the backend's error.
func TestLogBackendDown(t *testing.T) {
	addr, stop := startLogd(t)
	s := logServer(t, addr, "metrics", 300*time.Millisecond)
	sendTCP(t, s, "a:1|c\n")
	waitReceived(t, s, 0, 1)
	if snap := s.Flush(context.Background()); snap.Server.BackendErrors["kafka"] != 0 {
		t.Fatalf("backend errors %v before logd stopped", snap.Server.BackendErrors)
	}
	stop()
	sendTCP(t, s, "a:1|c\n")
	waitReceived(t, s, 0, 2)
	s.Flush(context.Background())
	if snap := s.Flush(context.Background()); snap.Server.BackendErrors["kafka"] != 1 {
		t.Fatalf("backend errors %v after a flush to a stopped logd, want kafka 1", snap.Server.BackendErrors)
	}
}

func TestLogConfig(t *testing.T) {
	_, err := NewLog(LogConfig{})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Log.Publisher" {
		t.Fatalf("NewLog without a publisher: %v", err)
	}
}
