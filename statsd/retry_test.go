package statsd

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

const millis = time.Millisecond

// TestReadBackoff: the pauses between failed reads double from
// minReadPause up to maxReadPause and start again after a read that
// worked; a log is due at most once every gap, with the failures since
// the last one.
func TestReadBackoff(t *testing.T) {
	var b readBackoff
	t0 := time.Unix(1000, 0)
	var pauses []time.Duration
	var logs []uint64
	now := t0
	for range 12 {
		p, logNow, n := b.failed(now, time.Second)
		pauses = append(pauses, p)
		if logNow {
			logs = append(logs, n)
		}
		now = now.Add(p)
	}
	want := []time.Duration{5 * millis, 10 * millis, 20 * millis, 40 * millis, 80 * millis, 160 * millis, 320 * millis, 640 * millis, time.Second, time.Second, time.Second, time.Second}
	if !slices.Equal(pauses, want) {
		t.Errorf("pauses = %v, want %v", pauses, want)
	}
	// Logged at 0, at 1.275 s (8 failures later), at 2.915 s, 3.915 s...
	if wantLogs := []uint64{1, 8, 1, 1, 1}; !slices.Equal(logs, wantLogs) {
		t.Errorf("failures at each log = %v, want %v", logs, wantLogs)
	}
	b.succeeded()
	if p, _, _ := b.failed(now, time.Second); p != minReadPause {
		t.Errorf("pause after a read that worked = %v, want %v", p, minReadPause)
	}
}

// readErrorServer starts a server whose clock moves only by the pauses
// between failed reads, which it records, and whose log goes to the
// returned buffer.
func readErrorServer(t *testing.T) (*Server, *[]time.Duration, *bytes.Buffer) {
	var clock atomic.Int64
	clock.Store(time.Unix(1e9, 0).UnixNano())
	logs := new(bytes.Buffer)
	s := startServer(t, Config{
		Now:           func() time.Time { return time.Unix(0, clock.Load()) },
		BadLineLogGap: 100 * millis,
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
	})
	pauses := new([]time.Duration)
	s.pause = func(d time.Duration) {
		*pauses = append(*pauses, d)
		clock.Add(int64(d))
	}
	return s, pauses, logs
}

// failing is a read's outcome: an error, or a datagram when nil.
type failing []error

var enobufs = &net.OpError{Op: "read", Net: "udp", Err: os.NewSyscallError("recvmmsg", syscall.ENOBUFS)}

// readErrorScript: five failed reads, one that works, three failed, then
// the socket is closed.
var readErrorScript = failing{enobufs, enobufs, enobufs, enobufs, enobufs, nil, enobufs, enobufs, enobufs, net.ErrClosed}

// checkReadErrors checks what a reader did with readErrorScript: it
// paused between the failed reads, longer and longer, from the start
// again after the read that worked, took the datagram, counted every
// failure and logged two of them (the first, and the first 100 ms
// later, with the 5 failures since).
func checkReadErrors(t *testing.T, s *Server, pauses []time.Duration, logs string) {
	t.Helper()
	want := []time.Duration{5 * millis, 10 * millis, 20 * millis, 40 * millis, 80 * millis, 5 * millis, 10 * millis, 20 * millis}
	if !slices.Equal(pauses, want) {
		t.Errorf("pauses = %v, want %v", pauses, want)
	}
	waitReceived(t, s, 1, 1)
	if got := s.Flush(t.Context()).Server.Listen.ReadErrors; got != 8 {
		t.Errorf("ReadErrors = %d, want the 8 failed reads", got)
	}
	if n := strings.Count(logs, "read failed"); n != 2 || !strings.Contains(logs, "failures=1 ") || !strings.Contains(logs, "failures=5 ") {
		t.Errorf("logged %d read failures, want 2, with failures=1 and failures=5:\n%s", n, logs)
	}
}

// TestUDPReadErrorsPause: a UDP read that keeps failing (ENOBUFS) is
// retried after a pause, not at once: a persistent error spun a core.
func TestUDPReadErrorsPause(t *testing.T) {
	s, pauses, logs := readErrorServer(t)
	r := &udpReader{cfg: &s.cfg, q: newUDPQueue()}
	s.wg.Add(1)
	go r.parse(s)
	msgs := make([]ipv4.Message, 4)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 512)}
	}
	script := readErrorScript
	read := func() (int, error) {
		err := script[0]
		script = script[1:]
		if err != nil {
			return 0, err
		}
		msgs[0].N = copy(msgs[0].Buffers[0], "udp.after.enobufs:1|c")
		msgs[0].Flags = 0
		return 1, nil
	}
	r.readLoop(s, "udp test", read, msgs)
	close(r.q.full)
	checkReadErrors(t, s, *pauses, logs.String())
}

// scriptedUnix is a unix datagram socket that reads as script says.
type scriptedUnix struct{ script failing }

func (c *scriptedUnix) ReadMsgUnix(b, _ []byte) (n, oobn, flags int, addr *net.UnixAddr, err error) {
	err, c.script = c.script[0], c.script[1:]
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return copy(b, "unix.after.enobufs:1|c"), 0, 0, nil, nil
}

// TestUnixgramReadErrorsPause: the same for a unix datagram socket.
func TestUnixgramReadErrorsPause(t *testing.T) {
	s, pauses, logs := readErrorServer(t)
	r := &unixReader{cfg: &s.cfg}
	r.readLoop(s, "unixgram test", &scriptedUnix{script: readErrorScript})
	checkReadErrors(t, s, *pauses, logs.String())
}

// TestReadPauseEndsOnClose: a listener pausing between failed reads
// goes back to its socket when the server closes, to find it closed,
// rather than holding Close up for the rest of the pause.
func TestReadPauseEndsOnClose(t *testing.T) {
	s, err := NewServer(t.Context(), Config{UDP: []string{"127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.sleep(time.Hour)
		close(done)
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pause went on after Close")
	}
}
