package reliable

import (
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// A Receiver believes claims that would end or move a stream only from
// the stream's own source, once its publisher has fallen silent at the
// position the receiver knows; the package documentation ("What a
// Receiver believes") explains why and how.

// jumpClaim is a datagram beyond MaxJump, awaiting confirmation.
type jumpClaim struct {
	top uint64 // highest sequence number claimed
	n   int    // datagrams that agree with it
}

// sourceOK reports whether a datagram of the stream from from is taken,
// counting it as dropped when it is not. Without a key only the stream's
// source is believed. With a key, a DATA, HEARTBEAT or END comes from a
// key holder or is a replay, which moves nothing, so it is taken from
// any address; the source, where NACKs go (and the only address NCFs and
// LOST notices are taken from), is the address of the last of them that
// reached past the highest sequence number seen (reach, 0 for NCF and
// LOST), which only the publisher can send. So a replay that arrives
// first, and ties the stream to the replayer's address, neither shuts
// out the publisher's own datagrams nor keeps the stream: the
// publisher's next data takes it back.
func (st *stream) sourceOK(from netip.AddrPort, reach uint64) bool {
	switch {
	case from == st.source:
		return true
	case st.r.keyed() && reach > 0:
		if reach > st.highest {
			st.source = from
		}
		return true
	}
	st.r.stats.WrongSource++
	return false
}

// silent reports whether nothing has shown the publisher alive at the
// stream's known position for ConfirmTime.
func (st *stream) silent() bool { return st.r.now.Sub(st.lastLive) >= st.r.cfg.ConfirmTime }

// admit reports whether a datagram claiming sequence numbers up to top
// is believed: within MaxJump of the highest sequence number seen, or
// of the publisher's position when the stream was met (see sync); live is set for an original DATA or a heartbeat (not a
// repair), which show where the publisher is now.
func (st *stream) admit(top uint64, live bool) bool {
	r := st.r
	known := max(st.highest, st.met)
	if top <= known || top-known <= r.cfg.MaxJump || r.keyed() {
		if live {
			st.lastLive = r.now
			st.jump = jumpClaim{}
		}
		return true
	}
	c := &st.jump
	if c.n == 0 || max(top, c.top)-min(top, c.top) > r.cfg.MaxJump {
		*c = jumpClaim{top: top, n: 1}
	} else {
		c.n++
		c.top = max(c.top, top)
	}
	if c.n < 2 || !st.silent() {
		r.stats.Jumps++
		return false
	}
	r.stats.JumpsConfirmed++
	*c = jumpClaim{}
	st.lastLive = r.now
	return true
}

// onEnd takes an END: the session is over and its last sequence number
// is beat.Next-1. It is held for ConfirmTime (see endDue), unless
// authenticated; it reports whether the stream ended at once.
func (st *stream) onEnd(beat Beat) bool {
	r := st.r
	last := beat.Next - 1
	switch {
	case last < st.highest:
		r.stats.EndsRejected++
	case r.keyed():
		st.endNext = beat.Next
		st.closeEnded()
		return true
	case last-st.highest > r.cfg.MaxJump:
		r.stats.EndsRejected++
	case !st.ending || st.endNext != beat.Next:
		st.ending, st.endNext, st.endAt = true, beat.Next, r.now
	}
	return false
}

// contradictEnd cancels a held END that the publisher contradicted by
// sending on: a heartbeat, or new data past the END's last sequence.
func (st *stream) contradictEnd(top uint64, heartbeat bool) {
	if st.ending && (heartbeat || top >= st.endNext) {
		st.ending = false
		st.r.stats.EndsRejected++
	}
}

// endDue is when a held END takes effect.
func (st *stream) endDue() time.Time { return st.endAt.Add(st.r.cfg.ConfirmTime) }

// closeEnded ends the stream of a confirmed END: what is still missing
// up to its last sequence number is reported lost, then StreamEnd.
func (st *stream) closeEnded() {
	st.extend(st.endNext-1, false)
	st.end(transport.EndClosed)
}
