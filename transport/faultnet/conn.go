package faultnet

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Conn is a net.Conn that applies [StreamFaults] to an underlying
// net.Conn: delayed writes, short reads and a connection cut after a
// number of bytes. Like any net.Conn, it is safe for concurrent use.
type Conn struct {
	conn net.Conn
	f    StreamFaults

	rngMu sync.Mutex
	rng   *rand.Rand // sizes reads when MaxChunk > 0

	budget  *budget       // nil when CutAfter == 0
	cutOnce sync.Once     // the cut happens once
	cutCh   chan struct{} // closed by the cut

	delay *delayer // nil when Delay == 0

	closeOnce sync.Once
}

// NewConn wraps c. It returns an error wrapping [ErrBadFaults] if f is
// unusable. With a Delay it starts a goroutine, which Close stops.
func NewConn(c net.Conn, f StreamFaults) (*Conn, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	seed := uint64(f.Seed)
	sc := &Conn{
		conn:  c,
		f:     f,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		cutCh: make(chan struct{}),
	}
	if f.CutAfter > 0 {
		sc.budget = &budget{left: f.CutAfter}
	}
	if f.Delay > 0 {
		sc.delay = newDelayer(sc, f.Delay)
	}
	return sc, nil
}

// Read reads at most a random 1..MaxChunk bytes when MaxChunk is set.
// Once the connection is cut it returns an error wrapping [ErrCut].
func (c *Conn) Read(p []byte) (int, error) {
	n := len(p)
	if c.f.MaxChunk > 0 && n > 0 {
		c.rngMu.Lock()
		n = min(n, 1+c.rng.IntN(c.f.MaxChunk))
		c.rngMu.Unlock()
	}
	if c.budget == nil {
		return c.conn.Read(p[:n])
	}
	n, ok := c.budget.readLimit(n)
	if !ok {
		return 0, c.opError("read", ErrCut)
	}
	m, err := c.conn.Read(p[:n])
	kept, cutNow := c.budget.read(m)
	if cutNow {
		c.cut()
	}
	// Bytes read past the budget are lost with the connection.
	if (kept == 0 && m > 0) || (err != nil && c.budget.isCut()) {
		err = c.opError("read", ErrCut)
	}
	return kept, err
}

// Write writes p, or with a Delay queues it to be written once the delay
// has passed and returns at once (blocking only while 4 MiB are already
// queued). Once the connection is cut it returns an error wrapping
// [ErrCut]; a write that reaches CutAfter writes what fits, then cuts.
func (c *Conn) Write(p []byte) (int, error) {
	if c.delay != nil {
		return c.delay.write(p)
	}
	return c.writeThrough(p)
}

// writeThrough writes p to the underlying conn, charging the budget.
func (c *Conn) writeThrough(p []byte) (int, error) {
	if c.budget == nil {
		return c.conn.Write(p)
	}
	granted, ok := c.budget.reserve(len(p))
	if !ok {
		return 0, c.opError("write", ErrCut)
	}
	n, err := c.conn.Write(p[:granted])
	if c.budget.wrote(granted, n) {
		c.cut()
	}
	// A short grant without an error means the budget ran out; the cut
	// comes once concurrent writes holding the rest of it are done.
	if (err == nil && n < len(p)) || (err != nil && c.budget.isCut()) {
		err = c.opError("write", ErrCut)
	}
	return n, err
}

// cut drops the connection abruptly: with a reset where the underlying
// conn can (a *net.TCPConn), and discarding bytes held by Delay.
func (c *Conn) cut() {
	c.cutOnce.Do(func() {
		if l, ok := c.conn.(interface{ SetLinger(int) error }); ok {
			_ = l.SetLinger(0) // best effort: a plain close still drops the connection
		}
		_ = c.conn.Close() // the cut is the point; a close error changes nothing
		close(c.cutCh)
	})
}

// Close closes the connection. With a Delay it first waits for the bytes
// still held back to be written as they fall due, for at most a second
// after the last one. Closing a connection that was cut returns nil.
func (c *Conn) Close() error {
	first := false
	c.closeOnce.Do(func() { first = true })
	if !first {
		return c.conn.Close()
	}
	if c.delay != nil {
		c.delay.close()
	}
	if c.budget != nil && c.budget.isCut() {
		return nil
	}
	return c.conn.Close()
}

// LocalAddr returns the underlying conn's local address.
func (c *Conn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// RemoteAddr returns the underlying conn's remote address.
func (c *Conn) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the underlying conn's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline. With a Delay it bounds how
// long Write waits for queue space; the delayed bytes themselves are
// written without it.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.delay != nil {
		c.delay.setDeadline(t)
		return nil
	}
	return c.conn.SetWriteDeadline(t)
}

func (c *Conn) opError(op string, err error) error {
	e := &net.OpError{Op: op, Source: c.conn.LocalAddr(), Addr: c.conn.RemoteAddr(), Err: err}
	if e.Source != nil {
		e.Net = e.Source.Network()
	}
	return e
}
