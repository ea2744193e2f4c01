package faultnet

import (
	"math/bits"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// Injector applies [Faults] to a sequence of datagrams. It is sans-IO:
// it owns no socket, starts no goroutine and never reads the clock — the
// caller passes the time to every call. Datagrams are offered with Push
// and taken, once due, with Pop:
//
//	in.Push(now, b, addr)
//	for {
//		b, addr, ok := in.Pop(now)
//		if !ok {
//			break
//		}
//		deliver(b, addr)
//	}
//	next, ok := in.NextDue() // when to call Pop again
//
// Every kept datagram goes through Pop, even one due at once. An Injector
// is not safe for concurrent use.
type Injector struct {
	f     Faults
	rng   *rand.Rand
	q     dueQueue
	pool  bufPool
	seq   uint64
	last  []byte // returned by the last Pop; recycled by the next call
	stats Stats
}

// NewInjector returns an Injector applying f, after filling in its
// defaults. It returns an error wrapping [ErrBadFaults] if f is unusable.
func NewInjector(f Faults) (*Injector, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	f = f.withDefaults()
	seed := uint64(f.Seed)
	return &Injector{
		f:    f,
		rng:  rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		pool: bufPool{maxBytes: f.MaxHeldBytes},
	}, nil
}

// Push offers one datagram that arrived at now, and reports whether it
// was kept: false when Loss or Drop dropped it or MaxHeld or
// MaxHeldBytes left no room for it. If it is kept, a copy of b is held
// until Pop returns it, so the caller may reuse b at once.
func (in *Injector) Push(now time.Time, b []byte, addr net.Addr) (kept bool) {
	return in.push(now, b, addr, netip.AddrPort{})
}

// push is Push for a datagram whose source is addr or, for a [Filter],
// from.
func (in *Injector) push(now time.Time, b []byte, addr net.Addr, from netip.AddrPort) bool {
	in.recycle()
	// Draw the same randomness for every datagram, whatever is configured.
	lose := in.rng.Float64() < in.f.Loss
	dup := in.rng.Float64() < in.f.Duplicate
	reorder := in.rng.Float64() < in.f.Reorder
	jitter, _ := bits.Mul64(in.rng.Uint64(), uint64(in.f.Jitter))

	if (in.f.Drop != nil && in.f.Drop(b)) || lose {
		in.stats.Dropped++
		return false
	}
	if !in.fits(len(b)) {
		in.stats.Overflow++
		return false
	}
	in.stats.Passed++
	delay := in.f.Delay + time.Duration(jitter)
	if delay > 0 {
		in.stats.Delayed++
	}
	if reorder {
		delay += in.f.ReorderDelay
		in.stats.Reordered++
	}
	due := now.Add(delay)
	in.hold(due, b, addr, from)
	if dup && in.fits(len(b)) {
		in.stats.Duplicated++
		in.hold(due, b, addr, from)
	}
	return true
}

// Pop returns the datagram due first if it is due at or before now:
// datagrams come out in due order, and those due at the same time in the
// order they were pushed. b stays valid until the next call to Push or
// Pop.
func (in *Injector) Pop(now time.Time) (b []byte, addr net.Addr, ok bool) {
	e, ok := in.pop(now)
	return e.buf, e.addr, ok
}

// pop takes the datagram due first if it is due at or before now.
func (in *Injector) pop(now time.Time) (held, bool) {
	in.recycle()
	if in.q.len() == 0 || in.q.peek().due.After(now) {
		return held{}, false
	}
	e := in.q.pop()
	in.last = e.buf
	return e, true
}

// NextDue returns when the earliest held datagram becomes due, and false
// if none is held.
func (in *Injector) NextDue() (time.Time, bool) {
	if in.q.len() == 0 {
		return time.Time{}, false
	}
	return in.q.peek().due, true
}

// Held is the number of datagrams waiting to be popped.
func (in *Injector) Held() int { return in.q.len() }

// Stats returns what the Injector has done so far.
func (in *Injector) Stats() Stats { return in.stats }

func (in *Injector) fits(n int) bool {
	return in.q.len() < in.f.MaxHeld && in.q.bytes+n <= in.f.MaxHeldBytes
}

func (in *Injector) hold(due time.Time, b []byte, addr net.Addr, from netip.AddrPort) {
	in.q.push(held{due: due, seq: in.seq, buf: in.pool.copyOf(b), addr: addr, from: from})
	in.seq++
}

func (in *Injector) recycle() {
	in.pool.put(in.last)
	in.last = nil
}
