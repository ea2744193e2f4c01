package faultnet

import (
	"net"
	"os"
	"sync"
	"time"
)

// maxDatagram is the largest UDP payload, the size of the read buffer.
const maxDatagram = 1 << 16

type reader struct {
	readMu sync.Mutex // serialises ReadFrom; held while blocked reading
	buf    []byte     // guarded by readMu

	mu       sync.Mutex // guards the fields below
	in       *Injector
	deadline time.Time // the caller's read deadline
	applied  time.Time // the deadline last set on the underlying conn
}

func newReader(in *Injector) *reader {
	return &reader{in: in, buf: make([]byte, maxDatagram)}
}

// ReadFrom returns the next datagram that is due, after faults.
func (c *PacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	r := c.r
	if r == nil {
		return c.conn.ReadFrom(p)
	}
	r.readMu.Lock()
	defer r.readMu.Unlock()
	for {
		if c.closed.Load() {
			return 0, nil, c.opError("read", nil, net.ErrClosed)
		}
		r.mu.Lock()
		now := c.now()
		if expired(r.deadline, now) {
			r.mu.Unlock()
			return 0, nil, c.opError("read", nil, os.ErrDeadlineExceeded)
		}
		if b, addr, ok := r.in.Pop(now); ok {
			n := copy(p, b)
			r.mu.Unlock()
			return n, addr, nil
		}
		err := r.applyDeadline(c.conn)
		r.mu.Unlock()
		if err != nil {
			return 0, nil, err
		}
		n, addr, err := c.conn.ReadFrom(r.buf)
		if err != nil {
			if isTimeout(err) {
				continue // a datagram fell due, or the caller's deadline passed
			}
			return 0, nil, err
		}
		r.mu.Lock()
		r.in.Push(c.now(), r.buf[:n], addr)
		r.mu.Unlock()
	}
}

// SetReadDeadline sets the deadline for ReadFrom. It takes effect at
// once, also for a ReadFrom that is blocked.
func (c *PacketConn) SetReadDeadline(t time.Time) error {
	r := c.r
	if r == nil {
		return c.conn.SetReadDeadline(t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deadline = t
	return r.applyDeadline(c.conn)
}

// applyDeadline sets the underlying read deadline to the earlier of the
// caller's deadline and the next due time. r.mu must be held.
func (r *reader) applyDeadline(conn net.PacketConn) error {
	d := r.deadline
	if due, ok := r.in.NextDue(); ok && (d.IsZero() || due.Before(d)) {
		d = due
	}
	if d.Equal(r.applied) {
		return nil
	}
	if err := conn.SetReadDeadline(d); err != nil {
		return err
	}
	r.applied = d
	return nil
}
