package faultnet

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

type writer struct {
	mu        sync.Mutex // guards in, deadline, scheduled and sending on the conn
	in        *Injector
	deadline  time.Time // the caller's write deadline
	scheduled time.Time // when the sender will next wake; zero if idle

	wake   chan struct{} // tells the sender a datagram is due earlier
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when the sender returns; nil without one

	failed atomic.Uint64 // delayed sends that failed
}

func newWriter(in *Injector) *writer { return &writer{in: in} }

// WriteTo applies the write faults to p and sends what is due at once:
// nothing if p is dropped, p twice if it is duplicated. Delayed datagrams
// are sent later. It returns len(p) unless the caller's write deadline
// has passed or a send it made failed; the error of a later, delayed
// send is counted by WriteErrors instead.
func (c *PacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	w := c.w
	if w == nil {
		return c.conn.WriteTo(p, addr)
	}
	if c.closed.Load() {
		return 0, c.opError("write", addr, net.ErrClosed)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := c.now()
	if expired(w.deadline, now) {
		return 0, c.opError("write", addr, os.ErrDeadlineExceeded)
	}
	w.in.Push(now, p, addr)
	failed, err := w.sendDue(c.conn, now)
	if failed > 1 {
		w.failed.Add(uint64(failed - 1))
	}
	if due, ok := w.in.NextDue(); ok && w.wake != nil && (w.scheduled.IsZero() || due.Before(w.scheduled)) {
		select {
		case w.wake <- struct{}{}:
		default: // the sender is already due to wake
		}
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetWriteDeadline sets the deadline for WriteTo. Delayed datagrams sent
// by the PacketConn's goroutine are subject to it too.
func (c *PacketConn) SetWriteDeadline(t time.Time) error {
	if w := c.w; w != nil {
		w.mu.Lock()
		w.deadline = t
		w.mu.Unlock()
	}
	return c.conn.SetWriteDeadline(t)
}

// WriteErrors counts delayed datagrams whose send failed after WriteTo
// had returned, so no caller could be told.
func (c *PacketConn) WriteErrors() uint64 {
	if c.w == nil {
		return 0
	}
	return c.w.failed.Load()
}

// sendDue sends every datagram due at now. It returns how many sends
// failed and the first error. w.mu must be held.
func (w *writer) sendDue(conn net.PacketConn, now time.Time) (failed int, first error) {
	for {
		b, addr, ok := w.in.Pop(now)
		if !ok {
			return failed, first
		}
		if _, err := conn.WriteTo(b, addr); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
}

func (w *writer) startSender(c *PacketConn) {
	w.wake = make(chan struct{}, 1)
	w.done = make(chan struct{})
	w.exited = make(chan struct{})
	go w.runSender(c)
}

// signalStop tells the sender to return; waitStopped waits until it has.
func (w *writer) signalStop() {
	if w.done != nil {
		close(w.done)
	}
}

func (w *writer) waitStopped() {
	if w.exited != nil {
		<-w.exited
	}
}

// runSender sends delayed datagrams when they fall due, until Close.
func (w *writer) runSender(c *PacketConn) {
	defer close(w.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		case <-timer.C:
		}
		w.mu.Lock()
		now := c.now()
		failed, _ := w.sendDue(c.conn, now)
		if !c.closed.Load() { // sends failing because of Close are not errors
			w.failed.Add(uint64(failed))
		}
		due, ok := w.in.NextDue()
		w.scheduled = due
		w.mu.Unlock()
		if ok {
			timer.Reset(due.Sub(now))
		} else {
			timer.Stop()
		}
	}
}
