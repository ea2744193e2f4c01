package statsd

import (
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// tickClock is a clock that moves 1 ms at each reading, so that no two
// events share a time.
func tickClock() func() time.Time {
	var n atomic.Int64
	start := time.Unix(1700000000, 0)
	return func() time.Time { return start.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// openTCP reports how many TCP connections l holds.
func (l *tcpListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// waitOpen waits until the server holds n TCP connections.
func waitOpen(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.tcp[0].open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d TCP connections, want %d", s.tcp[0].open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTCPIdleConnsLockNobodyOut: MaxConns (the default, 1024) idle
// connections (an attacker that opens sockets and sends nothing) do not
// lock a real client out: the new connection evicts the one idle the
// longest, counted, and its lines are counted. A connection that sent
// lately is not the one evicted, though it was opened first.
func TestTCPIdleConnsLockNobodyOut(t *testing.T) {
	const limit = DefaultMaxConns
	s := startServer(t, Config{TCP: []string{"127.0.0.1:0"}, Now: tickClock()})
	addr := s.TCPAddrs()[0].String()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	send := func(c net.Conn, line string) {
		t.Helper()
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	live := dial()
	waitOpen(t, s, 1)
	idle := make([]net.Conn, limit-1)
	for i := range idle {
		idle[i] = dial() // accepted in this order: the queue is FIFO
	}
	waitOpen(t, s, limit)
	send(live, "live:1|c\n")
	waitReceived(t, s, 0, 1)

	newcomer := dial()
	send(newcomer, "real:1|c\nreal:2|c\n")
	waitReceived(t, s, 0, 3)
	send(live, "live:1|c\n")
	waitReceived(t, s, 0, 4)

	// The first idle connection was the one idle the longest.
	idle[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the connection idle the longest: read %v, want EOF (evicted)", err)
	}
	snap := s.Flush(t.Context())
	if got := snap.Server.Listen.EvictedConns; got != 1 {
		t.Errorf("EvictedConns = %d, want 1", got)
	}
	counts := map[string]float64{}
	for _, c := range snap.Counters {
		counts[c.Key] = c.Count
	}
	if counts["real"] != 3 || counts["live"] != 2 {
		t.Errorf("counters real %v and live %v, want 3 and 2", counts["real"], counts["live"])
	}
}

// TestTCPIdleTimeout: with an IdleTimeout, a connection that sends
// nothing for that long is closed and counted; what it sent before is
// counted.
func TestTCPIdleTimeout(t *testing.T) {
	s := startServer(t, Config{TCP: []string{"127.0.0.1:0"}, IdleTimeout: 50 * time.Millisecond})
	c, err := net.Dial("tcp", s.TCPAddrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("quiet:1|c\n")); err != nil {
		t.Fatal(err)
	}
	waitReceived(t, s, 0, 1)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle connection: read %v, want EOF (closed by the server)", err)
	}
	waitOpen(t, s, 0)
	if got := s.Flush(t.Context()).Server.Listen.IdleConns; got != 1 {
		t.Errorf("IdleConns = %d, want 1", got)
	}
}

// frameStream feeds stream to a lineFramer of max bytes in reads of
// the given sizes (cycled; each at most the space offered) and returns
// the lines of its packets and the number of lines found too long.
func frameStream(stream []byte, max int, reads []int) (lines []string, tooLong int) {
	f := newLineFramer(max)
	for i := 0; len(stream) > 0; i++ {
		sp := f.space()
		if len(sp) == 0 {
			panic("no space to read into")
		}
		n := len(sp)
		if len(reads) > 0 {
			n = min(n, 1+reads[i%len(reads)])
		}
		n = copy(sp, stream[:min(n, len(stream))])
		stream = stream[n:]
		pkt, long := f.advance(n)
		if len(pkt) > 0 && pkt[len(pkt)-1] != '\n' {
			panic("packet without its last newline")
		}
		for _, l := range strings.SplitAfter(string(pkt), "\n") {
			if l != "" {
				lines = append(lines, strings.TrimSuffix(l, "\n"))
			}
		}
		if long != nil {
			tooLong++
		}
	}
	return lines, tooLong
}

// wantFrames is what a stream holds: its lines of at most max bytes,
// in order, and how many are longer (the last one too, unterminated,
// once longer than max; shorter, it is a partial line never completed).
func wantFrames(stream []byte, max int) (lines []string, tooLong int) {
	parts := strings.Split(string(stream), "\n")
	for i, l := range parts {
		switch {
		case len(l) > max:
			tooLong++
		case i < len(parts)-1:
			lines = append(lines, l)
		}
	}
	return lines, tooLong
}

func TestLineFramer(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct {
		stream string
		reads  []int
	}{
		{"a:1|c\nb:2|c\n", nil},
		{"a:1|c\nb:2|c\n", []int{0}},
		{"a:1|c\nb:2", []int{3, 7}},
		{"a:1|c\n" + long + "\nb:2|c\n", []int{10}},
		{long + long + "\n\nc:3|c\n" + long, []int{64}},
		{strings.Repeat("y", 64) + "\n" + strings.Repeat("z", 65) + "\nd:4|c\n", []int{64, 0, 2}},
	} {
		got, gotLong := frameStream([]byte(tc.stream), 64, tc.reads)
		want, wantLong := wantFrames([]byte(tc.stream), 64)
		if strings.Join(got, "|") != strings.Join(want, "|") || gotLong != wantLong {
			t.Errorf("%q in reads of %v: lines %q, %d too long; want %q, %d", tc.stream, tc.reads, got, gotLong, want, wantLong)
		}
	}
}

// FuzzLineFramer: however the stream is cut into reads, the framer
// returns its lines of at most max bytes, in order, and counts each
// longer one once.
func FuzzLineFramer(f *testing.F) {
	f.Add([]byte("a:1|c\nb:2|c\n"), []byte{3, 0, 9})
	f.Add([]byte(strings.Repeat("x", 100)+"\nc:3|c\n"+strings.Repeat("y", 64)+"\n"), []byte{63, 1})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		const max = 64
		reads := make([]int, len(cuts))
		for i, c := range cuts {
			reads[i] = int(c)
		}
		got, gotLong := frameStream(stream, max, reads)
		want, wantLong := wantFrames(stream, max)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) || gotLong != wantLong {
			t.Fatalf("%q in reads of %v: lines %q, %d too long; want %q, %d", stream, reads, got, gotLong, want, wantLong)
		}
	})
}

// failingListener fails its first fail Accepts with err.
type failingListener struct {
	net.Listener
	fail int
	err  error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fail > 0 {
		l.fail--
		return nil, l.err
	}
	return l.Listener.Accept()
}

// TestTCPAcceptErrorsDoNotStopTheListener: a failed accept (EMFILE: the
// process is out of file descriptors for a moment) is counted and the
// listener goes on accepting once it passes; it stops only when closed.
func TestTCPAcceptErrorsDoNotStopTheListener(t *testing.T) {
	s := startServer(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	l := &tcpListener{ln: &failingListener{Listener: ln, fail: 3, err: emfile}, cfg: &s.cfg, conns: make(map[*tcpConn]struct{})}
	s.wg.Add(1)
	go l.run(s)
	t.Cleanup(l.close) // before the server's Close waits for it
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("after.emfile:1|c\n")); err != nil {
		t.Fatal(err)
	}
	waitReceived(t, s, 0, 1)
	if got := s.Flush(t.Context()).Server.Listen.ReadErrors; got != 3 {
		t.Errorf("ReadErrors = %d, want the 3 failed accepts", got)
	}
}
