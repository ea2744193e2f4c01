package multicast

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// reader is the state of the loop that owns the engine: it reads the
// group socket, takes what the unicast socket received, runs the
// engine's timers (waking for them through the read deadline) and fills
// the batch of events for the application. One goroutine at a time runs
// it, the holder of the reading role (subscriber_read.go): the
// application's, in Receive, or the reader goroutine's, readLoop.
type reader struct {
	rb        *readBatch
	now       time.Time // of the datagrams being handled
	handle    func(b []byte, from netip.AddrPort)
	pause     func() bool // Subscriber.mustPause
	deadline  time.Time   // the socket's read deadline, as last set
	catchUpTo time.Time   // reading what waits in the socket, timers held, until then
	caughtUp  bool        // a datagram was read since the catch-up began
}

func (s *Subscriber) newReader() (*reader, error) {
	rb, err := newReadBatch(s.data, s.cfg.Batch, maxDatagram, s.local.GRO)
	if err != nil {
		return nil, err
	}
	r := &reader{rb: rb}
	r.handle = func(b []byte, from netip.AddrPort) { s.handle(r.now, from, b) }
	r.pause = s.mustPause
	return r, nil
}

// step reads once, waiting until a datagram comes, the engine's next
// timer, or a wake-up (controlLoop, a Receive whose context ended, one
// that wants the role), and passes what came to the engine, whose
// events go to s.out. It reports false once the socket is closed.
func (s *Subscriber) step() bool {
	r := s.rd
	if !r.catchUpTo.IsZero() {
		r.deadline = s.cfg.Now().Add(catchUpRead)
		_ = s.data.SetReadDeadline(r.deadline)
	} else if d := s.deadline(); r.deadline == expired || !d.IsZero() && (r.deadline.IsZero() || d.Before(r.deadline)) {
		// Only an earlier deadline is set: the engine's moves later with
		// every datagram (the silence timer), and a read that wakes
		// early costs a turn, while setting the deadline cost one per
		// datagram.
		r.deadline = d
		_ = s.data.SetReadDeadline(d)
	}
	if s.woken.Swap(false) {
		// A wake-up may have come before the deadline above replaced
		// its own: the read returns at once.
		r.deadline = expired
		_ = s.data.SetReadDeadline(time.Now())
	}
	n := 0
	if s.inbox.empty() && !r.rb.pending() {
		var err error
		if canPoll && s.appReads && s.cfg.Spin > 0 && r.catchUpTo.IsZero() {
			n, err = s.spin()
		}
		if n == 0 && err == nil {
			n, err = r.rb.read()
			s.local.Reads++
			if s.appReads {
				s.local.OwnReads++
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			switch now := s.cfg.Now(); {
			case !r.catchUpTo.IsZero() && !r.caughtUp && now.Before(r.catchUpTo):
				// Nothing read yet: the timeout may be the read's
				// own, its deadline passed before it started (a
				// loaded machine), without looking at the socket.
				// Try again, until catchUpTo.
				return true
			case !r.catchUpTo.IsZero():
				r.catchUpTo = time.Time{} // nothing more waits
			case !r.deadline.IsZero() && r.deadline != expired && now.Sub(r.deadline) > overslept:
				// The process was stopped (SIGSTOP, a frozen VM)
				// past the deadline, which, expired, kept the read
				// from seeing what waits in the socket: read it
				// before the timers judge the publisher silent.
				s.local.Oversleeps++
				r.catchUpTo, r.caughtUp = now.Add(catchUpFor), false
				r.deadline = expired
				return true
			}
			// A timer, or a wake-up that moved the deadline behind our
			// back (a read without a deadline, the zero one, times out
			// only so): set it again next time.
			r.deadline = expired
			// The read, its deadline passed, returned without looking
			// at the socket. What came while this goroutine waited to
			// run (a loaded machine) goes to the engine before its
			// timers: a NACK confirmation waiting there cancels the
			// NACK it answers (suppression).
			if n, err = r.rb.readNow(); err != nil && !errors.Is(err, net.ErrClosed) {
				s.local.ReadErrors++
			}
		case errors.Is(err, net.ErrClosed):
			return false
		default:
			s.local.ReadErrors++
			return true
		}
	}
	r.now = s.cfg.Now()
	now := r.now
	r.caughtUp = r.caughtUp || n > 0
	if !r.catchUpTo.IsZero() && !now.Before(r.catchUpTo) {
		r.catchUpTo = time.Time{}
	}
	s.local.GROReads += uint64(r.rb.handle(r.handle, r.pause))
	s.inbox.drain(r.handle) // r.handle reads r.now
	if s.filter != nil {
		s.popFiltered(now)
	}
	if d := s.eng.Deadline(); !d.IsZero() && !now.Before(d) && r.catchUpTo.IsZero() {
		s.eng.Poll(now, (*handler)(s))
	}
	s.publishStats()
	return true
}

// expired marks the socket's read deadline as unknown.
var expired = time.Unix(1, 0)

// A read that returns this long past its deadline overslept: the
// process was stopped. (Not less: on a loaded machine reads return tens
// of milliseconds late often, and each catch-up holds the NACK timers;
// with 20 ms, TestLossRecovery/0.2 overflowed in 2 of 16 runs, with
// 250 ms in none. The engine's silence and restart judgments take 5 s
// and 250 ms.) The reader then reads what waits in the socket,
// each read waiting at most catchUpRead, before it runs the engine's
// timers again: until a read times out after one returned datagrams, or
// for at most catchUpFor. A timeout before any datagram does not end it:
// on a loaded machine the deadline may pass before the read starts, and
// the read then times out without looking at the socket. catchUpFor is
// short: the timers held meanwhile include the NACKs (500 ms made a 20%
// loss subscriber on a loaded machine overflow: TestLossRecovery).
const (
	overslept   = 250 * time.Millisecond
	catchUpRead = 5 * time.Millisecond
	catchUpFor  = 100 * time.Millisecond
)

// controlLoop reads the unicast socket and wakes the reader.
func (s *Subscriber) controlLoop() {
	defer s.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := s.ctrl.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.shut.Load() {
				return // closed, or Close ended the read (its deadline)
			}
			continue
		}
		if s.inbox.put(buf[:n], from) {
			_ = s.data.SetReadDeadline(time.Now())
			s.kick()
		}
	}
}

// deadline is when the reader must wake: the engine's next timer or a
// datagram the filter holds.
func (s *Subscriber) deadline() time.Time {
	d := s.eng.Deadline()
	if s.filter != nil {
		if due, ok := s.filter.NextDue(); ok && (d.IsZero() || due.Before(d)) {
			d = due
		}
	}
	return d
}

// handle passes one datagram to the engine, or to the filter when there
// is one.
func (s *Subscriber) handle(now time.Time, from netip.AddrPort, b []byte) {
	if s.filter != nil {
		if !s.filter.Push(now, b, from) {
			s.local.FilterDrops++
		}
		return
	}
	_ = s.eng.HandleDatagram(now, from, b, (*handler)(s))
}

// popFiltered passes the datagrams the filter has due to the engine.
func (s *Subscriber) popFiltered(now time.Time) {
	for {
		b, from, ok := s.filter.Pop(now)
		if !ok {
			return
		}
		_ = s.eng.HandleDatagram(now, from, b, (*handler)(s))
	}
}

func (s *Subscriber) publishStats() {
	st := s.local
	st.ReceiverStats = s.eng.Stats()
	st.InboxDrops = s.inbox.drops()
	s.statsMu.Lock()
	s.stats = st
	s.statsMu.Unlock()
}

// mustPause reports whether the application, reading for itself, must
// take events before more datagrams are handled: batches wait in
// s.over, or the batch being filled is full and the queue too. What
// the last read brought then waits in the read's buffers for the next
// step: one read of GRO runs of small messages can bring tens of
// thousands of events (at 336 bytes each), more than Queue batches
// hold (TestSubscriberOwnReadBounded).
func (s *Subscriber) mustPause() bool {
	return s.appReads && (len(s.over) > 0 || s.out.full() && len(s.ready) == cap(s.ready))
}

// handOver passes the batch being filled, if it holds anything, to the
// application and takes an empty one. It waits while the application is
// Queue batches behind, and reports false when the subscriber closed
// meanwhile. It is called after each read, and by Deliver when the
// batch is full: what the reader holds for the application is bounded
// by Queue+1 full batches, however many messages one read or one call
// into the engine brings (a read of GRO runs of small messages brings
// tens of thousands). Before, a full batch grew when the application
// had no room, each batch keeping its grown size: a recorder behind its
// logd held hundreds of thousands of events, and a publisher with flow
// control, which counts what the engine has taken, ran that far ahead
// of what the application had (TestSubscriberQueueBounded).
func (s *Subscriber) handOver() bool {
	for len(s.over) > 0 { // older than s.out: the application's, reading for itself, left them
		select {
		case s.ready <- s.over[0]:
			s.popOver()
		case <-s.stop:
			return false
		}
	}
	if len(s.out.events) == 0 {
		return true
	}
	select {
	case s.ready <- s.out:
	default:
		s.local.QueueStalls++
		select {
		case s.ready <- s.out:
		case <-s.stop:
			return false
		}
	}
	b := s.free.take(s.stop)
	if b == nil {
		return false // closed meanwhile
	}
	s.out = b
	return true
}

// handler is the Subscriber seen as the engine's reliable.Handler. Its
// methods run on the holder of the reading role.
type handler Subscriber

func (h *handler) Deliver(ev *transport.Event) {
	s := (*Subscriber)(h)
	if s.out.full() {
		if s.appReads {
			s.handOverOwn()
		} else if !s.handOver() {
			// Closed while waiting: the batch may be the application's
			// now. Nothing more is handed over; the rest goes to a
			// batch of its own.
			s.out = newBatch()
		}
	}
	s.out.add(ev)
}

func (h *handler) SendNack(to netip.AddrPort, b []byte) {
	s := (*Subscriber)(h)
	if _, err := s.ctrl.WriteToUDPAddrPort(b, to); err != nil {
		s.local.NackErrors++
	}
}

func (h *handler) SendStatus(to netip.AddrPort, b []byte) {
	s := (*Subscriber)(h)
	if _, err := s.ctrl.WriteToUDPAddrPort(b, to); err != nil {
		s.local.StatusErrors++
	}
}
