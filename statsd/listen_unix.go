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

func (r *unixReader) run(s *Server) {
	defer s.wg.Done()
	buf := make([]byte, r.cfg.MaxDatagram)
	b := newBatch(r.cfg.NoSanitize)
	for {
		n, _, flags, _, err := r.conn.ReadMsgUnix(buf, nil)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.counters.readErrors.Add(1)
			continue
		}
		p := buf[:n]
		if flags&unix.MSG_TRUNC != 0 {
			p = s.cutShort(p)
		}
		s.repeat(p)
		b.addPacket(p)
		s.ingest(b)
	}
}
