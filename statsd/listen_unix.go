package statsd

import (
	"errors"
	"io/fs"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// unixReader reads a unix datagram socket. Senders there block or see
// EAGAIN when its buffer is full: the kernel does not drop.
type unixReader struct {
	conn *net.UnixConn
	path string
	cfg  *Config
}

// listenUnixgram binds path, replacing a stale socket file left there
// (never any other kind of file, nor a socket that a process still
// reads: that is another server's).
func listenUnixgram(path string, cfg *Config) (*unixReader, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		if probe, err := net.Dial("unixgram", path); err == nil {
			probe.Close()
			return nil, &AddrInUseError{Network: "unixgram", Addr: path}
		}
		_ = os.Remove(path)
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, listenError("unixgram", path, err)
	}
	if cfg.RecvBuffer > 0 {
		_ = c.SetReadBuffer(cfg.RecvBuffer)
	}
	return &unixReader{conn: c, path: path, cfg: cfg}, nil
}

func (r *unixReader) close() {
	r.conn.Close() // net removes the socket file it created
}

// msgReader is what unixReader reads: a *net.UnixConn, or a test's.
type msgReader interface {
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
}

func (r *unixReader) run(s *Server) {
	defer s.wg.Done()
	r.readLoop(s, "unixgram "+r.path, r.conn)
}

// readLoop reads c until it is closed. A failed read is counted and
// retried after a pause (readFailed, which logs it as what's).
func (r *unixReader) readLoop(s *Server, what string, c msgReader) {
	buf := make([]byte, r.cfg.MaxDatagram)
	b := newBatch(r.cfg.NoSanitize)
	var backoff readBackoff
	for {
		n, _, flags, _, err := c.ReadMsgUnix(buf, nil)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.readFailed(&backoff, what, err)
			continue
		}
		backoff.succeeded()
		p := buf[:n]
		if flags&unix.MSG_TRUNC != 0 {
			p = s.cutShort(p)
		}
		s.repeat(p)
		b.addPacket(p)
		s.ingest(b)
	}
}
