package faultnet

import (
	"net"
	"os"
	"sync"
	"time"
)

const (
	// maxDelayed bounds the bytes a Conn holds back for Delay; Write
	// blocks beyond it.
	maxDelayed = 4 << 20
	// closeGrace bounds how long Close waits, after the last held bytes
	// fall due, for them to be written.
	closeGrace = time.Second
)

// chunk is the bytes of one Write, held until due.
type chunk struct {
	due time.Time
	b   []byte
}

// delayer holds back written bytes for a fixed delay and writes them, in
// order, from its own goroutine.
type delayer struct {
	c     *Conn
	delay time.Duration

	mu       sync.Mutex
	q        []chunk
	queued   int           // bytes in q
	err      error         // why the last delayed write failed; sticky
	closing  bool          // Close was called: write what is held, then exit
	deadline time.Time     // the caller's write deadline
	room     chan struct{} // closed and replaced when writers should look again

	wake   chan struct{} // tells the goroutine q or closing changed
	exited chan struct{} // closed when the goroutine returns
}

func newDelayer(c *Conn, delay time.Duration) *delayer {
	d := &delayer{
		c:      c,
		delay:  delay,
		room:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
		exited: make(chan struct{}),
	}
	go d.run()
	return d
}

func (d *delayer) write(p []byte) (int, error) {
	for {
		d.mu.Lock()
		now := time.Now()
		switch {
		case d.c.budget != nil && d.c.budget.isCut():
			d.mu.Unlock()
			return 0, d.c.opError("write", ErrCut)
		case d.err != nil:
			err := d.err
			d.mu.Unlock()
			return 0, err
		case d.closing:
			d.mu.Unlock()
			return 0, d.c.opError("write", net.ErrClosed)
		case expired(d.deadline, now):
			d.mu.Unlock()
			return 0, d.c.opError("write", os.ErrDeadlineExceeded)
		case len(p) == 0:
			d.mu.Unlock()
			return 0, nil
		case d.queued == 0 || d.queued+len(p) <= maxDelayed:
			d.q = append(d.q, chunk{due: now.Add(d.delay), b: append([]byte(nil), p...)})
			d.queued += len(p)
			d.mu.Unlock()
			d.signal()
			return len(p), nil
		}
		room, deadline := d.room, d.deadline
		d.mu.Unlock()
		d.waitRoom(room, deadline) // then look again
	}
}

// waitRoom blocks until room is closed, the connection is cut or the
// deadline passes.
func (d *delayer) waitRoom(room <-chan struct{}, deadline time.Time) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-room:
	case <-d.c.cutCh:
	case <-timeout:
	}
}

func (d *delayer) setDeadline(t time.Time) {
	d.mu.Lock()
	d.deadline = t
	d.notifyRoom()
	d.mu.Unlock()
}

// notifyRoom wakes every waiting writer. d.mu must be held.
func (d *delayer) notifyRoom() {
	close(d.room)
	d.room = make(chan struct{})
}

func (d *delayer) signal() {
	select {
	case d.wake <- struct{}{}:
	default: // already signalled
	}
}

// close makes the goroutine write what is held, as it falls due, and
// waits for it to finish.
func (d *delayer) close() {
	d.mu.Lock()
	d.closing = true
	d.notifyRoom()
	if n := len(d.q); n > 0 {
		_ = d.c.conn.SetWriteDeadline(d.q[n-1].due.Add(closeGrace)) // only bounds the wait
	}
	d.mu.Unlock()
	d.signal()
	<-d.exited
}

// run writes held chunks as they fall due until Close or the cut.
func (d *delayer) run() {
	defer close(d.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		d.mu.Lock()
		if len(d.q) == 0 {
			closing := d.closing
			d.mu.Unlock()
			if closing {
				return
			}
			select {
			case <-d.wake:
			case <-d.c.cutCh:
				return
			}
			continue
		}
		next := d.q[0]
		d.mu.Unlock()
		if wait := time.Until(next.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-d.c.cutCh:
				return
			}
		}
		_, err := d.c.writeThrough(next.b)
		d.mu.Lock()
		d.q[0] = chunk{}
		d.q = d.q[1:]
		d.queued -= len(next.b)
		if err != nil {
			d.err, d.q, d.queued = err, nil, 0
		}
		d.notifyRoom()
		d.mu.Unlock()
		if err != nil {
			return
		}
	}
}
