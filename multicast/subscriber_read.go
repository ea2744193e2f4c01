package multicast

import (
	"context"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Who reads the group socket (runs the reader): the application's
// goroutine while it waits in Receive, the reader goroutine while the
// application is away.
//
// A Receive that finds nothing ready and nobody reading reads itself,
// as a raw UDP receiver would: a datagram then reaches the application
// without a hand-off between goroutines. Handing each datagram from a
// reader goroutine to the one in Receive woke a second thread per
// datagram (the runtime starts an idle P's thread for the goroutine it
// readies), which spun, found nothing, and slept again: a third of the
// subscriber's CPU at 30k msgs/s, and, on a two-core machine, the
// publisher's CPU too (BenchmarkLatency).
//
// When the application stays away longer than defaultAwayFor, or the engine's
// next timer, or a unicast datagram comes (controlLoop), the reader
// goroutine takes the role, so that the socket is drained and NACKs,
// STATUS and silence timers run while the application is busy, and
// hands its events over in batches, as before; a Receive that then
// finds nothing ready asks for the role back and waits for the reader
// goroutine to give it up. With an archive (Config.Archive) the reader
// goroutine reads always.
const (
	roleBg     = iota // the reader goroutine reads (as it does first)
	roleIdle          // nobody reads: the application is away from Receive
	roleApp           // the application reads, in Receive
	roleClosed        // Close took it: nobody reads again
)

// defaultAwayFor is how long the application may stay away from
// Receive before the reader goroutine reads in its place. The timer is
// armed whenever the role goes idle (the application leaves Receive, or
// the reader goroutine gives the role to a Receive that asked) and no
// earlier arming is pending, not moved at every leave: moving it woke a
// thread of the runtime's network poller each time (the timer was the
// poller's earliest), per datagram; so the reader goroutine may take
// the role from an application that left less than defaultAwayFor ago,
// at most once per defaultAwayFor.
const defaultAwayFor = time.Millisecond

// readLoop is the reader goroutine: it reads while it holds the role,
// handing events to the application in batches, and gives the role up
// when a Receive asks for it.
func (s *Subscriber) readLoop() {
	defer s.wg.Done()
	if !s.readBg() {
		return
	}
	for {
		select {
		case <-s.stop:
			return
		case <-s.away.C:
			s.rmu.Lock()
			s.awayArmed = false
			s.rmu.Unlock()
		case <-s.kicked:
		}
		s.rmu.Lock()
		if s.role != roleIdle {
			s.rmu.Unlock()
			continue
		}
		s.role = roleBg
		s.rmu.Unlock()
		if !s.readBg() {
			return
		}
	}
}

// readBg reads until a Receive asks for the role, which it then gives
// up; it reports false once the subscriber closed.
func (s *Subscriber) readBg() bool {
	for {
		if !s.step() || !s.handOver() {
			return false
		}
		if s.arch != nil {
			continue // the archive's Receive never reads itself
		}
		s.rmu.Lock()
		if s.appWaiting {
			s.appWaiting = false
			wait, arm := s.goIdle()
			s.rmu.Unlock()
			select {
			case s.roleFree <- struct{}{}:
			default:
			}
			if arm {
				s.away.Reset(wait)
			}
			return true
		}
		s.rmu.Unlock()
	}
}

// kick wakes the reader goroutine to read if nobody does.
func (s *Subscriber) kick() {
	select {
	case s.kicked <- struct{}{}:
	default:
	}
}

// refill hands the batch Receive has read back, and takes the next:
// one the reader goroutine handed over, or what it reads itself when
// nobody reads.
func (s *Subscriber) refill(ctx context.Context) error {
	if s.cur != nil {
		s.recycle(s.cur)
		s.cur = nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case s.cur = <-s.ready:
			s.next = 0
			return nil
		default:
		}
		s.rmu.Lock()
		if s.role == roleIdle {
			s.role = roleApp
			s.rmu.Unlock()
			return s.readSelf(ctx)
		}
		s.appWaiting = true
		s.rmu.Unlock()
		// Wake the reader goroutine from its read to give the role up.
		s.wakeRead()
		select {
		case s.cur = <-s.ready:
			s.next = 0
			return nil
		case <-s.roleFree:
		case <-ctx.Done():
			s.rmu.Lock()
			s.appWaiting = false
			s.rmu.Unlock()
			return ctx.Err()
		case <-s.stop:
			return transport.ErrClosed
		}
	}
}

// readSelf reads, holding the role, until events are ready or ctx ends,
// then gives the role up and takes the oldest batch of them.
func (s *Subscriber) readSelf(ctx context.Context) error {
	s.appReads = true
	var err error
	for len(s.out.events) == 0 && len(s.ready) == 0 && len(s.over) == 0 {
		// The error is looked at after hook, not only before: a context
		// that ended before hook's first call of Done may return the
		// runtime's one closed channel, which hook may have registered
		// already, for an earlier context, and then registers nothing.
		s.hook(ctx)
		if err = ctx.Err(); err != nil {
			break
		}
		if !s.step() {
			err = transport.ErrClosed
			break
		}
	}
	s.appReads = false
	if err == nil {
		s.takeOwn() // before the role goes: s.over and s.out are the holder's
	}
	s.rmu.Lock()
	wait, arm := s.goIdle()
	s.rmu.Unlock()
	if arm {
		s.away.Reset(wait)
	}
	return err
}

// goIdle gives the role up; its holder calls it with rmu held. Nobody
// reads until a Receive takes the role or the away timer wakes the
// reader goroutine, so the timer must then be pending: goIdle reports
// whether to arm it (no earlier arming is pending), and with what
// wait. Both ways of giving the role up come here. The reader
// goroutine, giving it to a Receive that asked, once did not arm it:
// that Receive may take the batch handed over just before instead of
// the role, and return; the application then away, nobody read the
// socket nor ran the engine's timers until its next Receive
// (TestRoleGivenBackWhileAway).
func (s *Subscriber) goIdle() (wait time.Duration, arm bool) {
	wait = defaultAwayFor
	if s.cfg.awayFor > 0 {
		wait = s.cfg.awayFor
	}
	if d := s.deadline(); !d.IsZero() {
		wait = max(min(wait, d.Sub(s.cfg.Now())), 0)
	}
	s.role = roleIdle
	s.idleCond.Broadcast()
	arm = !s.awayArmed
	s.awayArmed = true
	return wait, arm
}

// handOverOwn is handOver on the application's goroutine, reading for
// itself: full batches go to the ready queue, oldest first, while it
// has room; the rest wait in s.over, and s.out is a spare batch, since
// the application it would wait for is itself. The step pauses before
// a datagram when the application has that much to take (mustPause),
// so s.over holds only what one datagram released: a heartbeat that
// moves the publisher's window past a gap releases everything the
// engine held behind it, hundreds of thousands of events for a
// subscriber far behind a fast feed. Before, the batch being filled
// grew to hold them, copied at each doubling (a third of an overloaded
// recorder's CPU) and kept its grown size.
func (s *Subscriber) handOverOwn() {
	for len(s.over) > 0 && len(s.ready) < cap(s.ready) { // only the holder fills ready
		s.ready <- s.popOver()
	}
	if len(s.over) == 0 {
		select {
		case s.ready <- s.out:
			s.out = s.spare()
			return
		default:
		}
	}
	s.over = append(s.over, s.out)
	s.out = s.spare()
}

// takeOwn makes the oldest filled batch the application's (s.cur): of
// the ready queue, s.over, s.out, in that order.
func (s *Subscriber) takeOwn() {
	select {
	case s.cur = <-s.ready:
	default:
		if len(s.over) > 0 {
			s.cur = s.popOver()
		} else {
			s.cur, s.out = s.out, s.spare()
		}
	}
	s.next = 0
}

// popOver takes the oldest batch of s.over.
func (s *Subscriber) popOver() *batch {
	b := s.over[0]
	s.over[0] = nil
	s.over = s.over[1:]
	return b
}

// spare returns a free batch, or a new one when none is (s.over holds
// some). Those the free ones have no room for go (recycle): no more
// than two beyond the Queue+1 made at the start remain.
func (s *Subscriber) spare() *batch {
	if b := s.free.tryTake(); b != nil {
		return b
	}
	return newBatch()
}

// recycle gives a batch the application is done with back to the free
// ones, or to the garbage collector when they are all there (one made
// by spare).
func (s *Subscriber) recycle(b *batch) { s.free.put(b) }

// hook makes the end of ctx wake a read, so that a Receive reading for
// itself returns when ctx ends. The registration stays for the next
// Receive with a ctx of the same Done channel (registering costs
// allocations, per read); a late wake-up costs a reader one turn.
func (s *Subscriber) hook(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == s.hooked {
		return
	}
	if s.unhook != nil {
		s.unhook()
	}
	s.hooked = done
	s.unhook = context.AfterFunc(ctx, s.wakeRead)
}

// wakeRead wakes the read under way, or the next one (see woken).
func (s *Subscriber) wakeRead() {
	s.woken.Store(true)
	_ = s.data.SetReadDeadline(time.Now())
}
