package statsd

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// graphiteSink is a Carbon plaintext listener on 127.0.0.1 that hands
// over what each connection sent: one flush, for Etsy's backend and
// ours.
type graphiteSink struct {
	ln      net.Listener
	flushes chan sinkFlush
}

// sinkFlush is one connection's text and when it ended.
type sinkFlush struct {
	text string
	at   time.Time
}

func newGraphiteSink(t testing.TB) *graphiteSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &graphiteSink{ln: ln, flushes: make(chan sinkFlush, 1024)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				s.flushes <- sinkFlush{string(b), time.Now()}
			}()
		}
	}()
	return s
}

func (s *graphiteSink) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// next waits for the next flush and says when it arrived.
func (s *graphiteSink) next(t testing.TB, who string) (map[string]string, time.Time) {
	t.Helper()
	select {
	case f := <-s.flushes:
		return parseGraphite(t, f.text), f.at
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no flush reached the Graphite sink", who)
		return nil, time.Time{}
	}
}

// parseGraphite reads "name value timestamp" lines into name → value.
func parseGraphite(t testing.TB, text string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("bad Graphite line %q", sc.Text())
		}
		if _, err := strconv.ParseInt(f[2], 10, 64); err != nil {
			t.Fatalf("bad Graphite timestamp in %q", sc.Text())
		}
		if _, dup := m[f[0]]; dup {
			t.Fatalf("%s written twice in one flush", f[0])
		}
		m[f[0]] = f[1]
	}
	return m
}

// freeUDPPort finds a UDP port on 127.0.0.1 that is free right now.
func freeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func freeTCPPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer starts a Server on 127.0.0.1 with free ports, serving
// until the test ends.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.UDP == nil && cfg.TCP == nil && cfg.Unixgram == nil {
		cfg.UDP = []string{"127.0.0.1:0"}
	}
	// Registered first, so it runs last: after Serve returned, no
	// goroutine of the server may be left.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithCancel(context.Background())
	s, err := NewServer(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// sendUDP sends each packet as one datagram to addr.
func sendUDP(t testing.TB, addr string, packets ...string) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range packets {
		if _, err := c.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
}
