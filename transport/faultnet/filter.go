package faultnet

import (
	"net/netip"
	"time"
)

// Filter applies [Faults] to datagrams whose sources are
// netip.AddrPort values, for a receiver that reads its own sockets and
// lets a filter stand between them and its protocol engine. It has the
// method set of multicast.DatagramFilter, so a multicast Subscriber
// takes one as its datagram filter:
//
//	cfg.Filter = func() (multicast.DatagramFilter, error) {
//		return faultnet.NewFilter(faultnet.Faults{Seed: 1, Loss: 0.05})
//	}
//
// It is an [Injector] otherwise: sans-IO, seeded, bounded, counted in
// [Stats], not safe for concurrent use, and free of allocations once
// its buffers are warm.
type Filter struct {
	in *Injector
}

// NewFilter returns a Filter applying f, after filling in its defaults.
// It returns an error wrapping [ErrBadFaults] if f is unusable.
func NewFilter(f Faults) (*Filter, error) {
	in, err := NewInjector(f)
	if err != nil {
		return nil, err
	}
	return &Filter{in: in}, nil
}

// Push offers one datagram that arrived at now from from, and reports
// whether it was kept (see [Injector.Push]). A kept datagram comes back
// from Pop, perhaps later, perhaps twice; the caller may reuse b at
// once.
func (f *Filter) Push(now time.Time, b []byte, from netip.AddrPort) (kept bool) {
	return f.in.push(now, b, nil, from)
}

// Pop returns the datagram due first, with its source, if it is due at
// or before now (see [Injector.Pop]). b stays valid until the next call
// to Push or Pop.
func (f *Filter) Pop(now time.Time) (b []byte, from netip.AddrPort, ok bool) {
	e, ok := f.in.pop(now)
	return e.buf, e.from, ok
}

// NextDue returns when the earliest held datagram becomes due, and false
// if none is held.
func (f *Filter) NextDue() (time.Time, bool) { return f.in.NextDue() }

// Stats returns what the Filter has done so far.
func (f *Filter) Stats() Stats { return f.in.Stats() }
