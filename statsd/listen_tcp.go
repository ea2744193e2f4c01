package statsd

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// tcpListener accepts newline-delimited StatsD over TCP.
type tcpListener struct {
	ln  net.Listener
	cfg *Config
	mu  sync.Mutex
	// conns are the connections open, at most MaxConns; nil once
	// closed. An evicted connection leaves it at once, before its
	// goroutine ends.
	conns map[*tcpConn]struct{}
}

// tcpConn is one connection and when it last sent something (or was
// accepted), in cfg.Now's nanoseconds since the Unix epoch.
type tcpConn struct {
	net.Conn
	last atomic.Int64
}

func listenTCP(ctx context.Context, addr string, cfg *Config) (*tcpListener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &AddrInUseError{Network: "tcp", Addr: addr}
	}
	if err != nil {
		return nil, listenError("tcp", addr, err)
	}
	return &tcpListener{ln: ln, cfg: cfg, conns: make(map[*tcpConn]struct{})}, nil
}

// run accepts connections until the listener is closed. A failed
// accept (EMFILE: out of file descriptors for a while) is counted in
// ReadErrors and retried, after a pause that grows while it repeats, as
// net/http's Serve does (readFailed).
func (l *tcpListener) run(s *Server) {
	defer s.wg.Done()
	what := "tcp " + l.ln.Addr().String()
	var backoff readBackoff
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.readFailed(&backoff, what, err)
			continue
		}
		backoff.succeeded()
		tc := &tcpConn{Conn: c}
		now := l.cfg.Now()
		tc.last.Store(now.UnixNano())
		victim, ok := l.admit(tc)
		if !ok {
			c.Close()
			return
		}
		if victim != nil {
			s.counters.evictedConns.Add(1)
			victim.Close()
			s.log.Debug("statsd: TCP connection evicted: MaxConns open, it was idle the longest",
				"remote", victim.RemoteAddr().String(), "idle", now.Sub(time.Unix(0, victim.last.Load())),
				"max_conns", l.cfg.MaxConns, "for", c.RemoteAddr().String())
		}
		s.wg.Add(1)
		go l.serve(s, tc)
	}
}

// admit adds c to the connections; at MaxConns it takes out the one
// idle the longest and returns it, for the caller to close. False once
// the listener is closed.
func (l *tcpListener) admit(c *tcpConn) (victim *tcpConn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		return nil, false
	}
	if len(l.conns) >= l.cfg.MaxConns {
		// A scan, at the limit only: MaxConns is some thousands at most,
		// and a heap would need updating at every read.
		for o := range l.conns {
			if victim == nil || o.last.Load() < victim.last.Load() {
				victim = o
			}
		}
		delete(l.conns, victim)
	}
	l.conns[c] = struct{}{}
	return victim, true
}

func (l *tcpListener) close() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// serve reads one connection: every read that completes lines is one
// packet (as Etsy's TCP server counts them); a partial last line waits
// for the next read; a line longer than MaxLineLength is discarded and
// counted (lineFramer). With an IdleTimeout, a connection that sends
// nothing for that long is closed and counted.
func (l *tcpListener) serve(s *Server, c *tcpConn) {
	defer s.wg.Done()
	defer func() {
		l.mu.Lock()
		if l.conns != nil {
			delete(l.conns, c)
		}
		l.mu.Unlock()
		c.Close()
	}()
	f := newLineFramer(l.cfg.MaxLineLength)
	b := newConnBatch(l.cfg.NoSanitize)
	for {
		if l.cfg.IdleTimeout > 0 {
			c.SetReadDeadline(time.Now().Add(l.cfg.IdleTimeout))
		}
		n, err := c.Read(f.space())
		if n > 0 {
			c.last.Store(l.cfg.Now().UnixNano())
			pkt, tooLong := f.advance(n)
			if pkt != nil {
				s.repeat(pkt)
				b.addPacket(pkt)
				s.ingest(b)
			}
			if tooLong != nil {
				s.counters.tooLong.Add(1)
				b.addTooLong(tooLong)
				s.ingest(b)
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.counters.idleConns.Add(1)
				s.log.Debug("statsd: TCP connection closed: idle for IdleTimeout",
					"remote", c.RemoteAddr().String(), "idle_timeout", l.cfg.IdleTimeout)
			}
			return
		}
	}
}

// lineFramer cuts a byte stream into packets of whole lines, with no
// I/O: the caller reads into space() and hands the count to advance. A
// line longer than max bytes is reported once, by its start, and the
// rest of it skipped; a partial last line waits for the next read.
type lineFramer struct {
	buf []byte // max+1 bytes: a whole line of max bytes and its '\n'
	// The partial line is buf[start:start+have]; space() moves it to
	// the front, once what advance returned is no longer used.
	start, have int
	skipping    bool // inside a line that was too long
	max         int
}

func newLineFramer(max int) *lineFramer {
	return &lineFramer{buf: make([]byte, max+1), max: max}
}

// space is where the next read goes: never empty. It ends the validity
// of what advance returned.
func (f *lineFramer) space() []byte {
	if f.start > 0 {
		copy(f.buf, f.buf[f.start:f.start+f.have])
		f.start = 0
	}
	return f.buf[f.have:]
}

// advance takes n bytes read into space() and returns the whole lines
// they complete, with their newlines (nil if none), and the start of a
// line found too long (nil if none). Both are valid until the next
// call of space.
func (f *lineFramer) advance(n int) (pkt, tooLong []byte) {
	total := f.have + n
	data := f.buf[:total]
	if f.skipping {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			f.start, f.have = 0, 0
			return nil, nil
		}
		data, f.skipping = data[i+1:], false
	}
	if end := bytes.LastIndexByte(data, '\n'); end >= 0 {
		pkt, data = data[:end+1], data[end+1:]
	}
	if len(data) > f.max {
		tooLong, data, f.skipping = data, nil, true
	}
	// data is what is left of the partial line: the end of buf[:total].
	f.start, f.have = total-len(data), len(data)
	return pkt, tooLong
}
