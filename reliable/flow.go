package reliable

import (
	"net/netip"
	"time"
)

// FlowMode says which receivers a publisher's flow control waits for.
type FlowMode uint8

const (
	// FlowNone: the publisher goes at its own pace; a receiver that
	// falls further behind than the retransmit window loses messages
	// (LOST says so, and its Gap is transport.GapOutpaced).
	FlowNone FlowMode = iota
	// FlowMin: the publisher never lets its retransmit window pass the
	// slowest receiver that sent a STATUS within ReceiverTimeout, nor
	// sends more past that receiver's position than it said it can
	// take (Aeron's min flow control).
	FlowMin
	// FlowTagged: as FlowMin, counting only the receivers whose STATUS
	// carries FlowConfig.Tag (Aeron's tagged flow control): the ones
	// the publisher was told to wait for. Others are served as with
	// FlowNone.
	FlowTagged
)

func (m FlowMode) String() string {
	switch m {
	case FlowNone:
		return "none"
	case FlowMin:
		return "min"
	case FlowTagged:
		return "tagged"
	}
	return "FlowMode(?)"
}

// Defaults of FlowConfig.
const (
	DefaultReceiverTimeout  = 2 * time.Second
	DefaultMaxFlowReceivers = 1024
)

// FlowConfig is a Sender's flow control. The zero value is FlowNone.
type FlowConfig struct {
	Mode FlowMode
	// Tag selects the receivers FlowTagged waits for (non-zero).
	Tag uint64
	// MinReceivers: Publish is held until this many receivers (tagged
	// ones under FlowTagged) are known, so none misses the start.
	// Default 0. With fewer, a receiver the publisher outran before its
	// first STATUS came (a subscriber descheduled for the few
	// milliseconds a fast publisher takes to fill its window) is never
	// waited for: each STATUS it sends names a position the window no
	// longer holds, which is ignored as a forged one would be
	// (FlowBehind counts them), and a publisher faster than it goes on
	// outrunning it. Count here every receiver that must lose nothing.
	// With a key (SenderConfig.Key) such a receiver is waited for from
	// the window's low edge on: it loses only what it lost before its
	// first STATUS.
	MinReceivers int
	// ReceiverTimeout: a receiver silent this long is no longer waited
	// for (a crashed or stopped subscriber must not stop the feed).
	// Default 2 s.
	ReceiverTimeout time.Duration
	// MaxReceivers bounds the receivers tracked; STATUS from more is
	// dropped and counted (FlowReceiversFull). Default 1024.
	MaxReceivers int
}

func (c *FlowConfig) setDefaults() {
	setDefault(&c.ReceiverTimeout, DefaultReceiverTimeout)
	setDefault(&c.MaxReceivers, DefaultMaxFlowReceivers)
}

func (c *FlowConfig) validate() error {
	switch {
	case c.Mode > FlowTagged:
		return badConfig("Flow.Mode", c.Mode, "must be FlowNone, FlowMin or FlowTagged")
	case c.Mode == FlowTagged && c.Tag == 0:
		return badConfig("Flow.Tag", c.Tag, "must be non-zero with FlowTagged")
	case c.MinReceivers < 0:
		return badConfig("Flow.MinReceivers", c.MinReceivers, "must be ≥ 0")
	case c.ReceiverTimeout <= 0:
		return badConfig("Flow.ReceiverTimeout", c.ReceiverTimeout, "must be > 0")
	case c.MaxReceivers < 1 || c.MaxReceivers < c.MinReceivers:
		return badConfig("Flow.MaxReceivers", c.MaxReceivers, "must be ≥ 1 and ≥ MinReceivers")
	}
	return nil
}

// flowReceiver is what a Sender knows of one receiver from its STATUS.
type flowReceiver struct {
	id     uint64
	from   netip.AddrPort
	next   uint64
	window uint32
	seen   time.Time
}

// leftReceiver is a receiver that said it leaves (a leaving STATUS).
type leftReceiver struct {
	id uint64
	// at is the publisher's next sequence number when the leaving STATUS
	// came (the leaving STATUS names no position: next = 0 on the wire).
	// No STATUS the receiver sent before it left can name more.
	at   uint64
	when time.Time
}

// flow is a Sender's flow control state: the receivers it waits for.
type flow struct {
	cfg      FlowConfig
	keyed    bool           // every STATUS is authenticated (SenderConfig.Key)
	rcv      []flowReceiver // at most cfg.MaxReceivers
	left     []leftReceiver // recently left, oldest first; at most cfg.MaxReceivers
	held     bool           // the last Publish was held: Deadline wakes for expiries
	sendHeld bool           // the next unsent datagram waits for the slowest receiver
	stats    *SenderStats

	// slowest's answer, valid until a STATUS or an expiry changes it.
	cached  bool
	cNext   uint64
	cWindow uint32
	cOK     bool
	cUntil  time.Time // the next expiry
}

func (f *flow) on() bool { return f.cfg.Mode != FlowNone }

// status records a receiver's STATUS. sentNext bounds what it may
// claim; low is the window's low edge: a receiver that needs less is
// not waited for.
//
// Without a key a STATUS is believed as it comes, from any address: its
// receiver id, its position and its window. So anyone who can send to
// the publisher can hold it as a slow receiver would, naming a position
// the window holds and a small window, for ReceiverTimeout after each
// STATUS, as one of MaxReceivers receivers. What it cannot do is hold
// it with a position the window no longer holds: waiting could not help
// such a receiver (its subscriber reports its own Gap), so that STATUS
// is counted (FlowBehind) and ignored, whatever receiver it names. With
// a key, only key holders' STATUS is taken, each once (a replay is
// dropped by the opener: auth.go), and one behind the window is taken
// as naming the window's low edge (still counted, FlowBehind): the
// receiver, outrun, is waited for from there on and loses nothing more.
//
// A leaving STATUS (Status.Leaving: the receiver's subscriber closed)
// drops its receiver at once instead of after ReceiverTimeout. UDP may
// deliver a STATUS the receiver sent before it left after the leaving
// one; taken, it would bring the receiver back, and the publisher would
// wait for a receiver that is gone until ReceiverTimeout. So the flow
// remembers, for ReceiverTimeout, the receivers that left (at most
// MaxReceivers of them: past that the one that left first is forgotten,
// LeftEvicted) with the publisher's next sequence number when the
// leaving STATUS came: no STATUS sent before it can name more. A later
// STATUS from such a receiver that does not name more is stale, counted
// (StatusAfterLeave) and ignored. One that names more comes from a
// receiver that took datagrams sent after it left, so it did not leave
// (the leaving STATUS was forged, without a key), and is taken. Receiver
// ids are drawn at random per Receiver (ReceiverConfig.ID 0), so a new
// subscriber is never taken for one that left; one given the id of a
// receiver that left (ReceiverConfig.ID set) is served as with FlowNone
// until its position passes where that one left, or ReceiverTimeout
// after it left.
//
// Forged, a leaving STATUS is no worse than a forged STATUS: one naming
// the receiver's id, the publisher's next sequence and a large window
// releases the publisher from that receiver as well, until the receiver
// reports a position past the publisher's next sequence number when the
// forgery came. With a key it is authenticated and taken
// once, as any STATUS.
func (f *flow) status(now time.Time, from netip.AddrPort, st Status, sentNext, low uint64) {
	f.stats.StatusReceived++
	if !f.on() {
		return
	}
	if st.Leaving {
		f.leave(now, st.Receiver, sentNext)
		return
	}
	if f.cfg.Mode == FlowTagged && st.Tag != f.cfg.Tag {
		return
	}
	if st.Next < low {
		f.stats.FlowBehind++
		if !f.keyed {
			return
		}
		// A key holder's: a receiver the publisher outran (before its
		// first STATUS came, or since). Waited for from the window's
		// low edge on, it loses nothing more.
		st.Next = low
	}
	next := min(st.Next, sentNext)
	f.cached = false
	f.sendHeld = false // NextOutgoing looks again; Deadline says so meanwhile
	for i := range f.rcv {
		if r := &f.rcv[i]; r.id == st.Receiver {
			// Positions only move forward: a STATUS overtaken by a later
			// one on the way does not hold the publisher back.
			r.next, r.window, r.seen, r.from = max(r.next, next), st.Window, now, from
			return
		}
	}
	if i := f.leftIndex(now, st.Receiver); i >= 0 {
		if next <= f.left[i].at {
			f.stats.StatusAfterLeave++ // sent before it left
			return
		}
		f.left = append(f.left[:i], f.left[i+1:]...) // it did not leave
	}
	f.expire(now)
	if len(f.rcv) >= f.cfg.MaxReceivers {
		f.stats.FlowReceiversFull++
		return
	}
	f.rcv = append(f.rcv, flowReceiver{id: st.Receiver, from: from, next: next, window: st.Window, seen: now})
	f.stats.FlowReceivers++
}

// leave forgets the receiver id, if it is waited for, and remembers
// that it left when the publisher's next sequence number was sentNext.
func (f *flow) leave(now time.Time, id, sentNext uint64) {
	if i := f.leftIndex(now, id); i >= 0 {
		f.left = append(f.left[:i], f.left[i+1:]...)
	}
	if len(f.left) >= f.cfg.MaxReceivers {
		f.left = append(f.left[:0], f.left[1:]...)
		f.stats.LeftEvicted++
	}
	f.left = append(f.left, leftReceiver{id: id, at: sentNext, when: now})
	for i := range f.rcv {
		if f.rcv[i].id == id {
			last := len(f.rcv) - 1
			f.rcv[i] = f.rcv[last]
			f.rcv[last] = flowReceiver{}
			f.rcv = f.rcv[:last]
			f.cached = false
			f.sendHeld = false // NextOutgoing looks again
			f.stats.ReceiversLeft++
			return
		}
	}
}

// leftIndex forgets the receivers that left ReceiverTimeout ago or
// more, and returns the index of id among the others, -1 if not there.
func (f *flow) leftIndex(now time.Time, id uint64) int {
	gone := 0
	for gone < len(f.left) && now.Sub(f.left[gone].when) >= f.cfg.ReceiverTimeout {
		gone++
	}
	if gone > 0 {
		f.left = append(f.left[:0], f.left[gone:]...)
	}
	for i := range f.left {
		if f.left[i].id == id {
			return i
		}
	}
	return -1
}

// expire forgets the receivers silent for ReceiverTimeout.
func (f *flow) expire(now time.Time) {
	kept := f.rcv[:0]
	for _, r := range f.rcv {
		if now.Sub(r.seen) < f.cfg.ReceiverTimeout {
			kept = append(kept, r)
		} else {
			f.stats.FlowTimeouts++
		}
	}
	if len(kept) < len(f.rcv) {
		f.cached = false
	}
	clear(f.rcv[len(kept):])
	f.rcv = kept
}

// slowest returns the lowest position and the smallest window of the
// receivers waited for; ok is false when there are fewer than
// MinReceivers (then nothing may be published).
func (f *flow) slowest(now time.Time) (next uint64, window uint32, ok bool) {
	if f.cached && (f.cUntil.IsZero() || now.Before(f.cUntil)) {
		return f.cNext, f.cWindow, f.cOK
	}
	f.expire(now)
	next, window, ok = ^uint64(0), ^uint32(0), len(f.rcv) >= f.cfg.MinReceivers
	for _, r := range f.rcv {
		next, window = min(next, r.next), min(window, r.window)
	}
	if !ok {
		next, window = 0, 0
	}
	f.cached, f.cNext, f.cWindow, f.cOK, f.cUntil = true, next, window, ok, f.expiry()
	return next, window, ok
}

// expiry is when the next receiver times out, zero with none.
func (f *flow) expiry() time.Time {
	var at time.Time
	for _, r := range f.rcv {
		at = earliest(at, r.seen.Add(f.cfg.ReceiverTimeout))
	}
	return at
}
