package logd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log destination shared by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGarbageConnectionsLogRateLimited: 1,000 connections sending
// garbage (half with an impossible size, half a frame of random bytes)
// produce a handful of WARN lines, and /metrics counts all 1,000.
func TestGarbageConnectionsLogRateLimited(t *testing.T) {
	var logs lockedBuffer
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	const conns = 1000
	rng := rand.New(rand.NewPCG(14, 14))
	garbage := make([][]byte, conns)
	for i := range garbage {
		b := make([]byte, 64)
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		if i%2 == 0 {
			b[0] |= 0x80 // a size of at least 2 GiB
		} else {
			binary.BigEndian.PutUint32(b, 60)
			binary.BigEndian.PutUint16(b[4:], uint16(100+rng.IntN(30000))) // no such API key
		}
		garbage[i] = b
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, g := range garbage {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.Write(g)
			c.Read(make([]byte, 1)) // until the server closes it
		}()
	}
	wg.Wait()
	waitUntil(t, "every garbage connection counted", func() bool { return ts.metrics.badFrames.Load() == conns })
	lines := strings.Count(logs.String(), "\n")
	t.Logf("%d log lines:\n%s", lines, logs.String())
	if lines > 3 {
		t.Fatalf("%d log lines for %d garbage connections", lines, conns)
	}
	var m strings.Builder
	ts.writeMetrics(&m)
	if want := fmt.Sprintf("\nlogd_bad_requests_total %d\n", conns); !strings.Contains(m.String(), want) {
		t.Fatalf("/metrics lacks %q", strings.TrimSpace(want))
	}
}

// TestWarnLimiter: one line per gap, each saying how many were not
// logged since the previous one.
func TestWarnLimiter(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var l warnLimiter
	t0 := time.Unix(1e9, 0)
	for _, at := range []time.Duration{0, time.Second, 2 * time.Second, 10 * time.Second, 11 * time.Second} {
		l.warn(log, t0.Add(at), 10*time.Second, "trouble")
	}
	got := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(got) != 2 || !strings.HasSuffix(got[0], "unlogged_since_last=0") || !strings.HasSuffix(got[1], "unlogged_since_last=2") {
		t.Fatalf("log:\n%s", logs.String())
	}
}
