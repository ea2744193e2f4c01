package reliable

import (
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// stream is a Receiver's state for one publisher session.
//
// Invariant: every sequence number in [next, highest] is either held in
// the reorder buffer or in exactly one gap, and highest < next + the
// reorder buffer's frame capacity.
type stream struct {
	r        *Receiver
	id       transport.StreamID
	replaces transport.StreamID
	source   netip.AddrPort

	synced  bool // next and highest are set
	started bool // StreamStart delivered
	joining bool // skip continuation fragments until the first message start

	next      uint64 // next sequence number to deliver
	highest   uint64 // highest sequence number known to exist
	low       uint64 // highest window low edge the publisher announced
	met       uint64 // the publisher's position when the stream was placed (its live edge less one) when it joined at the window's low edge: admit judges jumps from here or highest
	lastHeard time.Time
	lastLive  time.Time  // last original DATA or heartbeat at the known position (admit.go)
	jump      jumpClaim  // a jump past MaxJump awaiting confirmation
	succ      *successor // a new session of the feed, held while this one is alive (successor.go)

	ending   bool      // an END is held until endAt+ConfirmTime
	endNext  uint64    // the held END's next sequence number
	endAt    time.Time // when it arrived
	nackAt   time.Time // no NACK is due before this (may be early, never late)
	nackSent time.Time // when the NACK awaiting its NCF went out
	srtt     time.Duration
	rttvar   time.Duration

	gaps gapSet
	held reorder
	asm  assembly

	pend    transport.Gap // gap not yet delivered, so it can grow
	hasPend bool
	pendAt  time.Time // when pend was found: it is delivered by pendAt+GapDelay
	lastWhy transport.GapReason

	noFlow bool // the publisher's latest DATA said it runs without flow control

	// Flow-control STATUS (status.go): when the next is due, and the
	// bytes of datagrams taken since the last.
	statusAt    time.Time
	statusBytes int
}

func (st *stream) heard() { st.lastHeard = st.r.now }

func (st *stream) capacity() uint64 { return uint64(st.held.maxFrames) }

// sync places a new stream's start: its first message when it began
// after we started listening, else the live edge (first message start
// seen) or, when asked for history, the publisher's window low edge,
// reporting what is older as a Gap.
func (st *stream) sync(liveEdge, low uint64) {
	cfg := &st.r.cfg
	st.synced = true
	switch {
	case st.fromStart():
		st.next = 1
	case cfg.Join == JoinEarliest:
		st.next = low
		// Placed at the window's low edge, the stream is behind the
		// publisher's live position by up to a window, which may span
		// more than MaxJump: its live datagrams are judged from where
		// it met them, not from the low edge.
		st.met = liveEdge - 1
	default:
		st.next = liveEdge
	}
	st.highest = st.next - 1
	if st.next > 1 && cfg.Join == JoinEarliest && st.next == low {
		// What the window no longer holds is reported, as JoinEarliest
		// promises: the publisher said it is gone. StreamStart names 1.
		st.emitGap(1, st.next-1, transport.GapUnrecoverable)
	}
}

// fromStart reports whether the stream's session began after the
// receiver started listening (ReceiverConfig.ListenSince): then it is
// delivered from its first message, whatever the first datagram met.
func (st *stream) fromStart() bool {
	since := st.r.cfg.ListenSince
	return !since.IsZero() && !SessionStart(st.id.Session).Before(since.Truncate(time.Millisecond))
}

// syncData places a new stream from its first DATA datagram: the live
// edge is its first message start.
func (st *stream) syncData(dh DataHead, frames []Frame) {
	edge := dh.FirstSeq + uint64(len(frames))
	for i := range frames {
		if frames[i].Begin() {
			edge = dh.FirstSeq + uint64(i)
			break
		}
	}
	st.sync(edge, dh.Low)
}

func (st *stream) onData(dh DataHead, frames []Frame, b []byte) {
	st.applyLow(dh.Low)
	for i := range frames {
		st.onFrame(dh.FirstSeq+uint64(i), &frames[i], b)
	}
	st.held.endDatagram()
}

func (st *stream) onBeat(beat Beat) {
	st.applyLow(beat.Low)
	st.extend(beat.Next-1, false)
}

// repairWait is how long to wait for a repair before asking again: the
// retransmission timeout of RFC 6298 over NACK→NCF round trips. Before
// the first measurement it is five NACK back-offs: long enough for a
// repair already promised by an NCF, short enough that losing it costs
// little.
func (st *stream) repairWait() time.Duration {
	c := &st.r.cfg
	rto := 5 * c.NackBackoffMax
	if st.srtt != 0 {
		rto = st.srtt + 4*st.rttvar
	}
	return min(max(rto, c.MinRepairTimeout), c.RepairTimeout)
}

func (st *stream) sampleRTT(rtt time.Duration) {
	if st.srtt == 0 {
		st.srtt, st.rttvar = rtt, rtt/2
		return
	}
	st.rttvar += (abs(st.srtt-rtt) - st.rttvar) / 4
	st.srtt += (rtt - st.srtt) / 8
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func (st *stream) onNcf(rr RangeReader) {
	st.r.stats.NcfsSeen++
	if !st.nackSent.IsZero() {
		st.sampleRTT(st.r.now.Sub(st.nackSent))
		st.nackSent = time.Time{}
	}
	wait := st.r.now.Add(st.repairWait())
	for i := 0; i < rr.Len(); i++ {
		rg := rr.At(i)
		for j := max(st.gaps.find(rg.From), 0); j < st.gaps.len(); j++ {
			g := &st.gaps.g[j]
			if g.from > rg.To {
				break
			}
			if g.to < rg.From || g.lost != 0 {
				continue
			}
			if !g.nacked {
				// Its first NACK, due or not, is sent only by Poll:
				// that round is avoided.
				st.r.stats.Suppressed++
			}
			if g.nackAt.Before(wait) {
				g.nackAt = wait
			}
			g.unanswered = 0
		}
	}
}

func (st *stream) onLost(rr RangeReader) {
	st.r.stats.LostSeen++
	for i := 0; i < rr.Len(); i++ {
		rg := rr.At(i)
		st.gaps.markLost(rg.From, rg.To, st.outpaced())
	}
	st.drain()
}

// onFrame places one frame: a duplicate, a repair filling a gap, an
// in-order frame to deliver at once, or a frame to hold.
func (st *stream) onFrame(seq uint64, f *Frame, b []byte) {
	r := st.r
	r.stats.Frames++
	if seq < st.next {
		r.stats.Duplicates++
		return
	}
	if seq > st.highest {
		st.extend(seq, true)
	} else {
		if st.held.has(seq) {
			r.stats.Duplicates++
			return
		}
		if !st.fill(seq) {
			return
		}
		r.stats.Recovered++
	}
	for seq != st.next {
		if st.held.hold(st.next, seq, b, f) {
			return
		}
		if !st.giveUpOldest() {
			r.stats.Overflow++
			return
		}
	}
	st.deliverFrame(seq, f)
	st.next++
	st.drain()
}

// extend records that every sequence up to seq exists: what lies between
// the highest seen and seq is missing, and seq too unless it has arrived.
func (st *stream) extend(seq uint64, arrived bool) {
	if seq <= st.highest {
		return
	}
	if seq-st.next >= st.capacity() {
		st.r.stats.Overflow++
		st.advanceTo(seq-st.capacity()+1, transport.GapOverflow)
	}
	last := seq
	if arrived {
		last--
	}
	if last > st.highest {
		st.addGap(st.highest+1, last)
	}
	st.highest = seq
}

// fill takes seq out of the gaps, reporting false when it is not missing
// (a late duplicate of something already given up).
func (st *stream) fill(seq uint64) bool {
	if st.gaps.remove(seq) {
		return true
	}
	if st.gaps.find(seq) < 0 || !st.giveUpOldest() {
		st.r.stats.Duplicates++
		return false
	}
	if seq < st.next || !st.gaps.remove(seq) {
		st.r.stats.Duplicates++
		return false
	}
	return true
}

func (st *stream) addGap(from, to uint64) {
	if st.gaps.full() {
		st.giveUpOldest()
	}
	r := st.r
	at := r.now.Add(nackDelay(uniform(r.cfg.Rand), r.cfg.NackBackoffMax, r.cfg.GroupSize))
	st.gaps.add(gap{from: from, to: to, nackAt: at, giveUpAt: r.now.Add(r.cfg.RecoveryTimeout)})
	st.nackAt = earliest(st.nackAt, at)
}

// applyLow gives up, as unrecoverable, what the publisher announced it
// no longer holds.
func (st *stream) applyLow(low uint64) {
	if low <= st.low {
		return
	}
	st.low = low
	if low > st.next {
		st.advanceTo(low, st.outpaced())
	}
}

// outpaced is the reason of a loss the publisher's window moved past:
// GapOutpaced when it runs without flow control (it did not wait for
// this receiver), else GapUnrecoverable.
func (st *stream) outpaced() transport.GapReason {
	if st.noFlow {
		return transport.GapOutpaced
	}
	return transport.GapUnrecoverable
}

// advanceTo gives up every missing sequence below target and delivers
// what is held below it.
func (st *stream) advanceTo(target uint64, why transport.GapReason) {
	if target <= st.next {
		return
	}
	st.gaps.markLost(st.next, target-1, why)
	st.drain()
	if st.next < target {
		st.emitGap(st.next, target-1, why)
		st.next = target
		st.highest = max(st.highest, target-1)
	}
}

// giveUpOldest abandons the oldest missing range to free room.
func (st *stream) giveUpOldest() bool {
	if st.gaps.len() == 0 {
		return false
	}
	st.r.stats.Overflow++
	g := st.gaps.g[0]
	st.gaps.markLost(g.from, g.to, transport.GapOverflow)
	st.drain()
	return true
}

// drain delivers, in order, what is held and what has been given up,
// until the next missing sequence that is still being recovered.
func (st *stream) drain() {
	for st.next <= st.highest {
		if st.gaps.len() > 0 && st.gaps.g[0].from == st.next {
			g := st.gaps.g[0]
			if g.lost == 0 {
				return
			}
			st.emitGap(g.from, g.to, g.lost)
			st.next = g.to + 1
			st.gaps.popFront()
			continue
		}
		f, d, ok := st.held.take(st.next)
		if !ok {
			return
		}
		st.deliverFrame(st.next, &f)
		st.held.done(d)
		st.next++
	}
}

// nackDue sends a NACK for the gaps whose timer is due, gives up those
// that ran out of time, and re-arms the stream's timer.
func (st *stream) nackDue() {
	r := st.r
	ranges := r.ranges[:0]
	var next time.Time
	for i := range st.gaps.g {
		g := &st.gaps.g[i]
		switch {
		case g.lost != 0:
			continue
		case r.now.Before(g.nackAt) || len(ranges) == r.cfg.NackRanges:
		case !r.now.Before(g.giveUpAt):
			g.lost = transport.GapTimeout
			continue
		default:
			ranges = append(ranges, Range{g.from, g.to})
			g.nacked = true
			// Each NACK no NCF answered doubles the wait (RFC 6298's
			// back-off): a congested path is not made worse.
			wait := min(st.repairWait()<<min(g.unanswered, 6), r.cfg.RepairTimeout)
			g.unanswered++
			g.nackAt = r.now.Add(wait)
		}
		next = earliest(next, g.nackAt)
	}
	st.nackAt = next
	if len(ranges) > 0 && st.source.IsValid() {
		st.nackSent = r.now
		r.nack = AppendRanges(r.nack[:0], TypeNack, st.id, ranges)
		if r.sealer != nil {
			r.nack = r.nack[:r.sealer.seal(r.nack[:cap(r.nack)], len(r.nack))]
		}
		r.stats.NacksSent++
		r.stats.NackRanges += uint64(len(ranges))
		r.h.SendNack(st.source, r.nack)
	}
	st.drain()
}

// end closes the stream out: what is still missing is reported lost,
// what is held is delivered, then StreamEnd.
func (st *stream) end(why transport.EndReason) {
	if st.synced && st.highest >= st.next {
		st.gaps.markLost(st.next, st.highest, transport.GapStreamEnded)
		st.drain()
	}
	if st.asm.active {
		st.emitGap(st.asm.start, st.next-1, transport.GapStreamEnded)
	}
	st.flushGap()
	if st.started {
		st.r.ev = transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{
			Stream: st.id, LastSeq: st.highest, Reason: why,
		}}
		st.r.h.Deliver(&st.r.ev)
	}
	rs := retiredSession{id: st.id}
	if why == transport.EndIdle && st.synced {
		rs.source, rs.next, rs.low, rs.lastLive, rs.noFlow = st.source, st.next, st.low, st.lastLive, st.noFlow
	}
	st.r.retire(rs)
}
