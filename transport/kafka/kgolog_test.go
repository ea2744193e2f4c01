package kafka

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestKgoLoggerRateLimits: a warning of the client is logged the first
// time, then at most once per message every kgoLogEvery, with the count
// of those not logged since; other messages are not held back by it.
func TestKgoLoggerRateLimits(t *testing.T) {
	var buf lockedBuffer
	l := newKgoLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	now := time.Unix(1_000_000, 0)
	l.now = func() time.Time { return now }
	if got := l.Level(); got != kgo.LogLevelWarn {
		t.Errorf("Level %v, want warn, the handler's", got)
	}
	for range 5 {
		l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "addr", "127.0.0.1:1")
		now = now.Add(time.Second)
	}
	l.Log(kgo.LogLevelError, "another", "err", "x")
	l.Log(kgo.LogLevelInfo, "below the handler's level")
	now = now.Add(kgoLogEvery)
	l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "addr", "127.0.0.1:1")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 ||
		!strings.Contains(lines[0], `level=WARN msg="kafka transport: client: unable to open connection to broker" addr=127.0.0.1:1`) || strings.Contains(lines[0], "not_logged_since") ||
		!strings.Contains(lines[1], `level=ERROR msg="kafka transport: client: another" err=x`) ||
		!strings.HasSuffix(lines[2], "addr=127.0.0.1:1 not_logged_since=4") {
		t.Errorf("logged:\n%s", buf.String())
	}
}

// TestKgoLoggerDiscard: with the default Logger the client is told to
// log nothing, and builds no line.
func TestKgoLoggerDiscard(t *testing.T) {
	var cfg Config
	if got := newKgoLogger(cfg.logger()).Level(); got != kgo.LogLevelNone {
		t.Errorf("Level %v, want none", got)
	}
}

// TestSubscriberLogsBrokerDown: a subscriber whose broker goes away logs
// it to Config.Logger — the client retries by itself, and Receive
// returns nothing meanwhile.
func TestSubscriberLogsBrokerDown(t *testing.T) {
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	addr := ln.Addr().String()
	var buf lockedBuffer
	cfg := parse(t, "logd://"+addr+"/down")
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sub, err := NewSubscriber(context.Background(), cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer sub.Close()
	srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	go func() {
		for !strings.Contains(buf.String(), "unable to open connection to broker") && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	for ctx.Err() == nil {
		if ev, err := sub.Receive(ctx); err == nil {
			t.Errorf("received %+v from a broker that is gone", ev)
		}
	}
	if !strings.Contains(buf.String(), "msg=\"kafka transport: client: unable to open connection to broker\" addr="+addr) {
		t.Errorf("nothing logged of the broker gone within %v:\n%s", testDeadline, buf.String())
	}
}
