package statsd

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
)

// tcpListener accepts newline-delimited StatsD over TCP.
type tcpListener struct {
	ln    net.Listener
	cfg   *Config
	slots chan struct{}
	mu    sync.Mutex
	conns map[net.Conn]struct{}
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
	return &tcpListener{ln: ln, cfg: cfg, slots: make(chan struct{}, cfg.MaxConns), conns: make(map[net.Conn]struct{})}, nil
}

func (l *tcpListener) run(s *Server) {
	defer s.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		select {
		case l.slots <- struct{}{}:
		default:
			s.counters.rejectedConns.Add(1)
			c.Close()
			continue
		}
		if !l.track(c) {
			<-l.slots
			c.Close()
			return
		}
		s.wg.Add(1)
		go l.serve(s, c)
	}
}

// track remembers c so close can end it; false once closed.
func (l *tcpListener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		return false
	}
	l.conns[c] = struct{}{}
	return true
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
// counted.
func (l *tcpListener) serve(s *Server, c net.Conn) {
	defer s.wg.Done()
	defer func() {
		l.mu.Lock()
		if l.conns != nil {
			delete(l.conns, c)
		}
		l.mu.Unlock()
		c.Close()
		<-l.slots
	}()
	buf := make([]byte, l.cfg.MaxLineLength+1)
	b := newBatch(l.cfg.NoSanitize)
	have := 0         // bytes of a partial line at the start of buf
	skipping := false // inside a line that was too long
	for {
		n, err := c.Read(buf[have:])
		if n > 0 {
			data := buf[:have+n]
			if skipping {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					have = 0
					continue
				}
				data, skipping = data[i+1:], false
			}
			end := bytes.LastIndexByte(data, '\n')
			if end >= 0 {
				pkt := data[:end+1]
				s.repeat(pkt)
				b.addPacket(pkt)
				s.ingest(b)
				data = data[end+1:]
			}
			if len(data) > l.cfg.MaxLineLength {
				s.counters.tooLong.Add(1)
				b.addTooLong(data)
				s.ingest(b)
				data, skipping = nil, true
			}
			have = copy(buf, data)
		}
		if err != nil {
			return
		}
	}
}
