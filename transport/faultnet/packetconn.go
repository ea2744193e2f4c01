package faultnet

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// Config configures a [PacketConn].
type Config struct {
	// Read applies to datagrams received by ReadFrom.
	Read Faults
	// Write applies to datagrams sent by WriteTo.
	Write Faults
	// Now is the clock due times are computed with. It must advance with
	// real time, because the PacketConn waits for due times with socket
	// deadlines and timers. Default time.Now.
	Now func() time.Time
}

func (c Config) validate() error {
	for _, side := range []struct {
		name string
		f    Faults
	}{{"Read", c.Read}, {"Write", c.Write}} {
		if err := side.f.validate(); err != nil {
			var fe *FaultsError
			if errors.As(err, &fe) {
				return &FaultsError{Field: side.name + "." + fe.Field, Reason: fe.Reason}
			}
			return err
		}
	}
	return nil
}

// PacketConn is a net.PacketConn that applies [Faults] to the datagrams
// it reads and writes through an underlying net.PacketConn.
//
// Reads: ReadFrom returns the next due datagram, reading the underlying
// conn meanwhile with a deadline that is the earlier of the caller's read
// deadline and the next due time. Writes: WriteTo drops and duplicates at
// once; datagrams it delays are sent later by a goroutine the PacketConn
// owns and Close stops. A direction without faults passes straight
// through. Datagrams still held when the PacketConn is closed are
// discarded, as a network would lose datagrams in flight.
//
// It is safe for concurrent use: any number of goroutines may write, and
// read (reads are served one at a time); Close and the deadline setters
// may be called from any goroutine.
type PacketConn struct {
	conn   net.PacketConn
	now    func() time.Time
	r      *reader // nil when Read has no faults
	w      *writer // nil when Write has no faults
	closed atomic.Bool
}

// NewPacketConn wraps c. It returns an error wrapping [ErrBadFaults] if
// cfg is unusable.
func NewPacketConn(c net.PacketConn, cfg Config) (*PacketConn, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pc := &PacketConn{conn: c, now: cfg.Now}
	if pc.now == nil {
		pc.now = time.Now
	}
	if !cfg.Read.Zero() {
		in, err := NewInjector(cfg.Read)
		if err != nil {
			return nil, err
		}
		pc.r = newReader(in)
	}
	if !cfg.Write.Zero() {
		in, err := NewInjector(cfg.Write)
		if err != nil {
			return nil, err
		}
		pc.w = newWriter(in)
		if cfg.Write.holds() {
			pc.w.startSender(pc)
		}
	}
	return pc, nil
}

// Stats returns what the read and write faults have done so far. A
// direction without faults reports zero Stats.
func (c *PacketConn) Stats() (read, write Stats) {
	if c.r != nil {
		c.r.mu.Lock()
		read = c.r.in.Stats()
		c.r.mu.Unlock()
	}
	if c.w != nil {
		c.w.mu.Lock()
		write = c.w.in.Stats()
		c.w.mu.Unlock()
	}
	return read, write
}

// Close closes the underlying conn, discards the datagrams still held
// and stops the goroutine sending delayed datagrams, waiting for it.
func (c *PacketConn) Close() error {
	if c.closed.Swap(true) {
		return c.conn.Close() // reports that it is already closed
	}
	if c.w == nil {
		return c.conn.Close()
	}
	c.w.signalStop()
	err := c.conn.Close() // unblocks a send in progress
	c.w.waitStopped()
	return err
}

// LocalAddr returns the underlying conn's local address.
func (c *PacketConn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// SetDeadline sets both the read and the write deadline.
func (c *PacketConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// opError builds the error a net.PacketConn returns for op.
func (c *PacketConn) opError(op string, addr net.Addr, err error) error {
	laddr := c.conn.LocalAddr()
	e := &net.OpError{Op: op, Source: laddr, Addr: addr, Err: err}
	if laddr != nil {
		e.Net = laddr.Network()
	}
	return e
}

// expired reports whether deadline is set and not after now.
func expired(deadline, now time.Time) bool {
	return !deadline.IsZero() && !now.Before(deadline)
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
