package faultnet

import (
	"fmt"
	"time"
)

// Defaults applied by [NewInjector] to zero fields of [Faults].
const (
	DefaultReorderDelay = 200 * time.Microsecond
	DefaultMaxHeld      = 4096
	DefaultMaxHeldBytes = 8 << 20
)

// Faults describes what happens to datagrams passing one way through an
// [Injector] or a [PacketConn].
//
// Each datagram is first offered to Drop, then lost with probability
// Loss; a kept datagram is delayed by Delay plus a uniform jitter in
// [0, Jitter), held back a further ReorderDelay with probability Reorder
// (so later datagrams overtake it), and delivered twice with probability
// Duplicate.
type Faults struct {
	// Seed seeds the PRNG: the same seed and the same sequence of
	// datagrams give the same decisions. Every datagram consumes the same
	// amount of randomness whatever is configured, so, for a seed, the
	// datagrams Loss drops do not change when other faults are added.
	Seed int64
	// Loss is the probability, in [0,1], that a datagram is dropped.
	Loss float64
	// Duplicate is the probability, in [0,1], that a kept datagram is
	// delivered twice. The copy is due together with the original and
	// comes right after it.
	Duplicate float64
	// Reorder is the probability, in [0,1], that a kept datagram is held
	// back by ReorderDelay.
	Reorder float64
	// ReorderDelay is how long a reordered datagram is held back.
	// Default DefaultReorderDelay when Reorder > 0.
	ReorderDelay time.Duration
	// Delay is added to every datagram.
	Delay time.Duration
	// Jitter adds a uniform extra delay in [0, Jitter) to every datagram.
	Jitter time.Duration
	// Drop, if set, drops (and counts in Stats.Dropped) every datagram for
	// which it returns true: targeted loss such as "the datagram carrying
	// sequence 1000". It is called with every datagram offered, one call
	// at a time, and must not keep b.
	Drop func(b []byte) bool
	// MaxHeld bounds how many datagrams (duplicates included) wait for
	// delivery. A datagram beyond it is discarded and counted in
	// Stats.Overflow; a duplicate beyond it is not made. Default
	// DefaultMaxHeld.
	MaxHeld int
	// MaxHeldBytes bounds the bytes of the datagrams waiting for
	// delivery, as MaxHeld bounds their number. Default
	// DefaultMaxHeldBytes.
	MaxHeldBytes int
}

// Zero reports whether no fault is configured, so datagrams pass
// unchanged and in order.
func (f Faults) Zero() bool {
	return f.Loss == 0 && f.Duplicate == 0 && f.Reorder == 0 &&
		f.Delay == 0 && f.Jitter == 0 && f.Drop == nil
}

// holds reports whether a datagram can become due later than it arrived.
func (f Faults) holds() bool { return f.Delay > 0 || f.Jitter > 0 || f.Reorder > 0 }

func (f Faults) validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", f.Loss}, {"Duplicate", f.Duplicate}, {"Reorder", f.Reorder}} {
		if !(p.v >= 0 && p.v <= 1) {
			return &FaultsError{Field: p.name, Reason: fmt.Sprintf("is %v, want a probability in [0,1]", p.v)}
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReorderDelay", f.ReorderDelay}, {"Delay", f.Delay}, {"Jitter", f.Jitter}} {
		if d.v < 0 {
			return &FaultsError{Field: d.name, Reason: fmt.Sprintf("is %v, want >= 0", d.v)}
		}
	}
	if f.MaxHeld < 0 {
		return &FaultsError{Field: "MaxHeld", Reason: fmt.Sprintf("is %d, want >= 0", f.MaxHeld)}
	}
	if f.MaxHeldBytes < 0 {
		return &FaultsError{Field: "MaxHeldBytes", Reason: fmt.Sprintf("is %d, want >= 0", f.MaxHeldBytes)}
	}
	return nil
}

func (f Faults) withDefaults() Faults {
	if f.Reorder > 0 && f.ReorderDelay == 0 {
		f.ReorderDelay = DefaultReorderDelay
	}
	if f.MaxHeld == 0 {
		f.MaxHeld = DefaultMaxHeld
	}
	if f.MaxHeldBytes == 0 {
		f.MaxHeldBytes = DefaultMaxHeldBytes
	}
	return f
}
