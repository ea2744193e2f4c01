package reliable

import (
	"fmt"
	"time"
)

// Rand is the source of randomness the engines use: session numbers and
// NACK back-off. *math/rand/v2.Rand satisfies it; tests pass a seeded
// one so runs repeat exactly.
type Rand interface {
	Uint64() uint64
}

// Default values of SenderConfig and ReceiverConfig.
const (
	DefaultMTU               = 1408 // Aeron's default: fits common Ethernet paths with room for IP/UDP headers
	DefaultMaxMessageSize    = 1 << 20
	DefaultMaxQueued         = 1024
	DefaultWindowDatagrams   = 16384
	DefaultWindowBytes       = 16 << 20
	DefaultHeartbeatMin      = 1 * time.Millisecond
	DefaultHeartbeatMax      = 100 * time.Millisecond
	DefaultRepairRate        = 64 << 20 // bytes per second
	DefaultRepairBurst       = 256 << 10
	DefaultRepairLinger      = 2 * time.Millisecond
	DefaultMaxPendingRepairs = 1024
	DefaultMaxNackSources    = 256
	DefaultSourceNackRate    = 5000 // NACKs per second
	DefaultSourceNackBurst   = 500
	DefaultSourceRepairShare = 2.0       // repair bytes per byte of new data
	DefaultSourceRepairRate  = 256 << 10 // bytes per second

	DefaultMaxStreams      = 16
	DefaultReorderFrames   = 1 << 18
	DefaultReorderBytes    = 32 << 20
	DefaultHoldBytes       = 4 << 20
	DefaultMaxGaps         = 1024
	DefaultNackBackoffMax  = 500 * time.Microsecond
	DefaultGroupSize       = 10
	DefaultRepairTimeout   = 100 * time.Millisecond
	DefaultMinRepairWait   = 1 * time.Millisecond
	DefaultRecoveryTimeout = 2 * time.Second
	DefaultIdleTimeout     = 5 * time.Second
	DefaultNackRanges      = 64
	DefaultGapDelay        = 50 * time.Millisecond
	DefaultMaxJump         = 1 << 18
	DefaultConfirmTime     = 250 * time.Millisecond
	DefaultStatusInterval  = 20 * time.Millisecond
	DefaultStatusWindow    = 1 << 20
)

// minMaxJump is the least MaxJump: one datagram can carry that many
// frames, so a datagram right after the highest seen may end that far
// past it.
const minMaxJump = 1 << 16

// MinMTU and MaxMTU bound SenderConfig.MTU: the least leaves room for
// the headers and a useful frame, the most is the largest UDP payload
// over IPv4.
const (
	MinMTU = 256
	MaxMTU = 65507
)

// SenderConfig configures a Sender. Zero fields take the documented
// defaults.
type SenderConfig struct {
	// Feed names the logical stream; it stays the same across restarts.
	Feed uint32
	// Session identifies this publisher incarnation. 0: NewSession.
	Session uint64
	// MTU is the largest datagram sent, headers included. Default 1408.
	MTU int
	// MaxMessageSize bounds the payload of one message; messages larger
	// than a datagram are fragmented. Default 1 MiB.
	MaxMessageSize int
	// MaxQueued bounds datagrams built but not yet handed to the
	// network; Publish returns ErrBackpressure beyond it. Default 1024,
	// raised if needed to hold one message of MaxMessageSize.
	MaxQueued int
	// WindowDatagrams and WindowBytes bound the retransmit window: the
	// datagrams kept to answer NACKs. Defaults 16384 and 16 MiB.
	WindowDatagrams int
	WindowBytes     int
	// HeartbeatMin and HeartbeatMax: after the last data, heartbeats
	// start HeartbeatMin apart and double up to HeartbeatMax, so tail
	// loss is found fast and an idle stream costs little. Defaults 1 ms
	// and 100 ms.
	HeartbeatMin, HeartbeatMax time.Duration
	// RepairRate (bytes/s) and RepairBurst (bytes) rate-limit repairs.
	// Defaults 64 MiB/s and 256 KiB.
	RepairRate  int64
	RepairBurst int
	// RepairLinger: with multicast repairs, NACKs from other receivers
	// for a datagram repaired less than this long ago are ignored: they
	// crossed the repair on its way. Default 2 ms.
	RepairLinger time.Duration
	// MaxPendingRepairs bounds datagrams queued for repair; NACKs beyond
	// it are dropped (and counted), receivers ask again. Default 1024.
	MaxPendingRepairs int
	// UnicastRepairs sends repairs only to the receiver that asked
	// instead of to the whole group. Without a Key, an address is sent
	// at most three times the bytes of the NACKs it sent, and the rest
	// of its repairs go to the group (RepairsToGroup): a NACK's source
	// address can be forged (budget.go, antiAmplification).
	UnicastRepairs bool
	// MaxNackSources bounds the source addresses whose NACK budgets are
	// kept; SourceNackRate (NACKs per second) and SourceNackBurst bound
	// the NACKs each may send; SourceRepairShare (repair bytes per byte
	// of new data sent, and per byte the window holds for what may be
	// saved up) and SourceRepairRate (bytes per second) bound the repairs
	// each may cause. See budget.go. Defaults 256, 5000/s, 500, 2 and
	// 256 KiB/s.
	MaxNackSources    int
	SourceNackRate    int
	SourceNackBurst   int
	SourceRepairShare float64
	SourceRepairRate  int64
	// Key, when set, authenticates every datagram: the Sender tags what
	// it sends and takes only NACKs tagged with the same key. Receivers
	// need the same key. At least 16 bytes; see the package
	// documentation for the tag.
	Key []byte
	// Flow is the flow control: which receivers, if any, the publisher
	// waits for. Default FlowNone.
	Flow FlowConfig
	// PadFull pads every DATA datagram closed because the next message
	// did not fit to exactly the MTU (the padded flag, zero bytes after
	// the last frame), so that a run of full datagrams has one size and
	// can be handed to the kernel as one UDP GSO buffer (UDP_SEGMENT
	// needs equal segments, the last one excepted). Datagrams closed
	// early, to send at once what is there, are not padded. Receivers
	// of this version accept both.
	PadFull bool
	// Rand draws the session number. Required when Session is 0.
	Rand Rand
}

func (c *SenderConfig) setDefaults() {
	c.Flow.setDefaults()
	setDefault(&c.MTU, DefaultMTU)
	setDefault(&c.MaxMessageSize, DefaultMaxMessageSize)
	setDefault(&c.MaxQueued, DefaultMaxQueued)
	setDefault(&c.WindowDatagrams, DefaultWindowDatagrams)
	setDefault(&c.WindowBytes, DefaultWindowBytes)
	setDefault(&c.HeartbeatMin, DefaultHeartbeatMin)
	setDefault(&c.HeartbeatMax, DefaultHeartbeatMax)
	setDefault(&c.RepairRate, DefaultRepairRate)
	setDefault(&c.RepairBurst, DefaultRepairBurst)
	setDefault(&c.RepairLinger, DefaultRepairLinger)
	setDefault(&c.MaxPendingRepairs, DefaultMaxPendingRepairs)
	setDefault(&c.MaxNackSources, DefaultMaxNackSources)
	setDefault(&c.SourceNackRate, DefaultSourceNackRate)
	setDefault(&c.SourceNackBurst, DefaultSourceNackBurst)
	setDefault(&c.SourceRepairShare, DefaultSourceRepairShare)
	setDefault(&c.SourceRepairRate, DefaultSourceRepairRate)
	if c.MTU >= MinMTU {
		// One message of MaxMessageSize must fit the send queue.
		room := c.MTU - dataHeadLen - frameHeadLen
		if c.Key != nil {
			room -= TrailerLen
		}
		need := c.MaxMessageSize/room + 3
		c.MaxQueued = max(c.MaxQueued, need)
	}
}

func (c *SenderConfig) validate() error {
	switch {
	case c.MTU < MinMTU || c.MTU > MaxMTU:
		return badConfig("MTU", c.MTU, "must be in [%d, %d]", MinMTU, MaxMTU)
	case c.MaxMessageSize < 1:
		return badConfig("MaxMessageSize", c.MaxMessageSize, "must be ≥ 1")
	case c.WindowDatagrams < 2*c.MaxQueued:
		return badConfig("WindowDatagrams", c.WindowDatagrams, "must be ≥ 2×MaxQueued (%d)", 2*c.MaxQueued)
	case c.WindowBytes < 2*c.MaxQueued*c.MTU:
		return badConfig("WindowBytes", c.WindowBytes, "must be ≥ 2×MaxQueued×MTU (%d)", 2*c.MaxQueued*c.MTU)
	case c.HeartbeatMin <= 0:
		return badConfig("HeartbeatMin", c.HeartbeatMin, "must be > 0")
	case c.HeartbeatMax < c.HeartbeatMin:
		return badConfig("HeartbeatMax", c.HeartbeatMax, "must be ≥ HeartbeatMin (%v)", c.HeartbeatMin)
	case c.RepairRate <= 0:
		return badConfig("RepairRate", c.RepairRate, "must be > 0")
	case c.RepairBurst < c.MTU:
		return badConfig("RepairBurst", c.RepairBurst, "must be ≥ MTU (%d)", c.MTU)
	case c.RepairLinger < 0:
		return badConfig("RepairLinger", c.RepairLinger, "must be ≥ 0")
	case c.MaxPendingRepairs < 1:
		return badConfig("MaxPendingRepairs", c.MaxPendingRepairs, "must be ≥ 1")
	case c.MaxNackSources < 1:
		return badConfig("MaxNackSources", c.MaxNackSources, "must be ≥ 1")
	case c.SourceNackRate < 1:
		return badConfig("SourceNackRate", c.SourceNackRate, "must be ≥ 1")
	case c.SourceNackBurst < 1:
		return badConfig("SourceNackBurst", c.SourceNackBurst, "must be ≥ 1")
	case !(c.SourceRepairShare >= 0):
		return badConfig("SourceRepairShare", c.SourceRepairShare, "must be ≥ 0")
	case c.SourceRepairRate < 0:
		return badConfig("SourceRepairRate", c.SourceRepairRate, "must be ≥ 0")
	case c.Key != nil && len(c.Key) < MinKeyLen:
		return badConfig("Key", keyLen(c.Key), "must be at least %d bytes", MinKeyLen)
	case c.Session == 0 && c.Rand == nil:
		return badConfig("Rand", c.Rand, "is required when Session is 0")
	}
	return c.Flow.validate()
}

// JoinPolicy says where a subscriber starts in a stream it meets.
type JoinPolicy uint8

const (
	// JoinLive starts at the first message seen: the live edge. A
	// repair (multicast for other receivers, of an older position)
	// does not place the stream; the first original DATA or heartbeat
	// does (RepairsBeforeStart).
	JoinLive JoinPolicy = iota
	// JoinEarliest asks the publisher for everything still in its
	// retransmit window; older messages are reported as a Gap (from 1,
	// GapUnrecoverable; StreamStart.FirstSeq is then 1). Its live
	// datagrams are judged for jumps from where the stream met the
	// publisher, not from the window's low edge.
	JoinEarliest
)

// ReceiverConfig configures a Receiver. Zero fields take the documented
// defaults.
type ReceiverConfig struct {
	// Feeds lists the feeds to accept; empty accepts any.
	Feeds []uint32
	// MaxStreams bounds the feeds tracked at once. Default 16.
	MaxStreams int
	// ReorderFrames and ReorderBytes bound, per stream, the frames held
	// while waiting for a repair (ReorderFrames is also the furthest a
	// frame may run ahead of the oldest loss). When they are full the
	// oldest loss is given up (GapOverflow) to stay at the live edge. The
	// index grows on demand, 24 bytes per frame of span. Defaults 262144
	// (a power of two) and 32 MiB.
	ReorderFrames int
	ReorderBytes  int
	// HoldBytes bounds, per stream, the datagrams of a new session of
	// its feed held while the stream is still alive (the restart is
	// believed only once it has been silent for ConfirmTime, see the
	// package documentation); they are handed to the new session's
	// stream once it is, so a quick restart loses nothing. Beyond it
	// they are dropped (RestartsDeferred) and recovered by NACK from the
	// new publisher's window, if it still has them. Default 4 MiB.
	HoldBytes int
	// MaxMessageSize bounds a reassembled message. Default 1 MiB.
	MaxMessageSize int
	// MaxGaps bounds, per stream, the separate missing ranges tracked.
	// Default 1024.
	MaxGaps int
	// NackBackoffMax and GroupSize shape the randomized delay before the
	// first NACK for a loss (RFC 5401's exponential back-off), so that
	// with many receivers one NACK usually goes out and the rest are
	// suppressed. Defaults 500 µs and 10 (tuned for a LAN, as
	// third-party Aeron tuning found: p99.9 recovery of 8 ms at the 10 ms
	// default, 105 µs at 500 µs).
	NackBackoffMax time.Duration
	GroupSize      int
	// RepairTimeout bounds how long to wait for a repair after a NACK
	// (or after an NCF says one is coming) before asking again. The
	// wait adapts to the round trips measured from NACK to NCF (RFC
	// 6298's smoothed RTT plus four deviations, at least
	// MinRepairTimeout, five NackBackoffMax before the first
	// measurement), doubling for each NACK in a row that no NCF
	// answered; RepairTimeout is its ceiling. Defaults 100 ms and 1 ms.
	RepairTimeout    time.Duration
	MinRepairTimeout time.Duration
	// RecoveryTimeout: a loss not repaired this long after it was seen
	// is reported as GapTimeout, however often NCFs promised a repair.
	// Everything after it waits meanwhile (delivery is in order), so it
	// bounds head-of-line blocking. Default 2 s.
	RecoveryTimeout time.Duration
	// IdleTimeout: a stream that sends nothing, not even a heartbeat,
	// this long has ended (EndIdle). If its publisher is heard again
	// (an outage, not a crash), the stream resumes where it left off,
	// and what it missed is repaired or reported as a Gap. It should
	// exceed the publisher's longest heartbeat interval (SenderConfig.
	// HeartbeatMax, 100 ms by default), or an idle publisher's stream
	// ends and resumes with each message. Default 5 s.
	IdleTimeout time.Duration
	// NackRanges bounds the ranges in one NACK. Default 64.
	NackRanges int
	// MaxJump bounds how far past the highest sequence number seen a
	// datagram of a known stream may reach and be believed; beyond it a
	// datagram is dropped (Jumps) unless the jump is confirmed, as the
	// package documentation's "What a Receiver believes" explains.
	// Default 262144, at least 65536.
	MaxJump uint64
	// ConfirmTime is how long a stream's publisher must have been
	// silent at its known position before a jump past MaxJump or
	// another session of its feed is believed, and how long an END is
	// held, waiting for the publisher to contradict it. It must exceed
	// the publisher's longest heartbeat interval (SenderConfig.
	// HeartbeatMax, 100 ms by default). Default 250 ms.
	ConfirmTime time.Duration
	// GapDelay bounds how long a Gap is held back so that adjacent
	// losses found one after the other (a window edge overtaking an
	// outage datagram by datagram) are reported as one Gap. A held Gap
	// is delivered before the next event of its stream, or GapDelay
	// after it was found, whichever comes first. Default 50 ms.
	GapDelay time.Duration
	// Join says where to start in a stream that began before
	// ListenSince. Default JoinLive.
	Join JoinPolicy
	// ListenSince is when the subscriber started listening. A stream
	// whose session began in the same millisecond or later (see
	// SessionStart) is
	// delivered from its first message, whatever Join says: everything
	// it published was meant for this subscriber, so early loss is
	// recovered or reported. Zero: treat every stream as older.
	ListenSince time.Time
	// Key, when set, admits only datagrams tagged with it (the
	// publisher's key) and tags the NACKs sent. Datagrams with a valid
	// tag come from a key holder, so what they claim (a jump, an END, a
	// restart) is believed at once. At least 16 bytes.
	Key []byte
	// StatusInterval is how often each stream's publisher is sent a
	// STATUS (how far this receiver has got, for flow control); one
	// also goes whenever a sixteenth of StatusWindow has been taken since
	// the last. Negative: never. Default 20 ms.
	StatusInterval time.Duration
	// StatusWindow is the bytes of datagrams the receiver says it can
	// take past its position (its socket buffer: a publisher with flow
	// control sends no more ahead of it). Default 1 MiB, at most 4 GiB-1.
	StatusWindow int
	// ID names the receiver in its STATUS. 0: drawn from Rand.
	ID uint64
	// Tag is sent in STATUS for publishers with FlowTagged flow control
	// (they wait only for receivers with their tag). Default 0: none.
	Tag uint64
	// Rand drives the NACK back-off. Required.
	Rand Rand
}

func (c *ReceiverConfig) setDefaults() {
	setDefault(&c.MaxStreams, DefaultMaxStreams)
	setDefault(&c.ReorderFrames, DefaultReorderFrames)
	setDefault(&c.ReorderBytes, DefaultReorderBytes)
	setDefault(&c.HoldBytes, DefaultHoldBytes)
	setDefault(&c.MaxMessageSize, DefaultMaxMessageSize)
	setDefault(&c.MaxGaps, DefaultMaxGaps)
	setDefault(&c.NackBackoffMax, DefaultNackBackoffMax)
	setDefault(&c.GroupSize, DefaultGroupSize)
	setDefault(&c.RepairTimeout, DefaultRepairTimeout)
	setDefault(&c.MinRepairTimeout, DefaultMinRepairWait)
	setDefault(&c.RecoveryTimeout, DefaultRecoveryTimeout)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.NackRanges, DefaultNackRanges)
	setDefault(&c.GapDelay, DefaultGapDelay)
	setDefault(&c.MaxJump, DefaultMaxJump)
	setDefault(&c.ConfirmTime, DefaultConfirmTime)
	setDefault(&c.StatusInterval, DefaultStatusInterval)
	setDefault(&c.StatusWindow, DefaultStatusWindow)
}

func (c *ReceiverConfig) validate() error {
	switch {
	case c.MaxStreams < 1:
		return badConfig("MaxStreams", c.MaxStreams, "must be ≥ 1")
	case c.ReorderFrames < 2 || c.ReorderFrames&(c.ReorderFrames-1) != 0:
		return badConfig("ReorderFrames", c.ReorderFrames, "must be a power of two ≥ 2")
	case c.ReorderBytes < MinMTU:
		return badConfig("ReorderBytes", c.ReorderBytes, "must be ≥ %d", MinMTU)
	case c.HoldBytes < 0:
		return badConfig("HoldBytes", c.HoldBytes, "must be ≥ 0")
	case c.MaxMessageSize < 1:
		return badConfig("MaxMessageSize", c.MaxMessageSize, "must be ≥ 1")
	case c.MaxGaps < 1:
		return badConfig("MaxGaps", c.MaxGaps, "must be ≥ 1")
	case c.NackBackoffMax < 0:
		return badConfig("NackBackoffMax", c.NackBackoffMax, "must be ≥ 0")
	case c.GroupSize < 1:
		return badConfig("GroupSize", c.GroupSize, "must be ≥ 1")
	case c.MinRepairTimeout <= 0:
		return badConfig("MinRepairTimeout", c.MinRepairTimeout, "must be > 0")
	case c.RepairTimeout < c.MinRepairTimeout:
		return badConfig("RepairTimeout", c.RepairTimeout, "must be ≥ MinRepairTimeout (%v)", c.MinRepairTimeout)
	case c.RecoveryTimeout <= 0:
		return badConfig("RecoveryTimeout", c.RecoveryTimeout, "must be > 0")
	case c.IdleTimeout <= 0:
		return badConfig("IdleTimeout", c.IdleTimeout, "must be > 0")
	case c.NackRanges < 1 || c.NackRanges > MaxWireRanges:
		return badConfig("NackRanges", c.NackRanges, "must be in [1, %d]", MaxWireRanges)
	case c.MaxJump < minMaxJump:
		return badConfig("MaxJump", c.MaxJump, "must be ≥ %d", minMaxJump)
	case c.ConfirmTime < 0:
		return badConfig("ConfirmTime", c.ConfirmTime, "must be ≥ 0")
	case c.GapDelay < 0:
		return badConfig("GapDelay", c.GapDelay, "must be ≥ 0")
	case c.Join > JoinEarliest:
		return badConfig("Join", c.Join, "must be JoinLive or JoinEarliest")
	case c.Key != nil && len(c.Key) < MinKeyLen:
		return badConfig("Key", keyLen(c.Key), "must be at least %d bytes", MinKeyLen)
	case c.StatusWindow < 1 || uint64(c.StatusWindow) > 1<<32-1:
		return badConfig("StatusWindow", c.StatusWindow, "must be in [1, 4294967295]")
	case c.Rand == nil:
		return badConfig("Rand", c.Rand, "is required")
	}
	return nil
}

// keyLen describes a key in an error without showing it.
type keyLen []byte

func (k keyLen) String() string { return fmt.Sprintf("of %d bytes", len(k)) }

func setDefault[T int | int64 | uint64 | float64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
