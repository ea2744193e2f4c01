package reliable

import (
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// A stream that sent nothing for IdleTimeout is ended (EndIdle) and its
// session retired. Silence is not proof that the publisher is gone: a
// partition, or a subscriber stopped for a few seconds, looks the same.
// So a session retired for silence, unlike one that ended with an END or
// was replaced by a new session, resumes when its publisher is heard
// again: new data (or a heartbeat) from its source that reaches past
// where the receiver left it. The stream takes up at that position, as
// it was (its window low edge, its last sign of life, for jump
// confirmation in admit): what the publisher sent meanwhile is missing,
// NACKed, and repaired or reported as a Gap (GapUnrecoverable or
// GapOutpaced once the publisher's window has moved past it, GapTimeout,
// GapOverflow) like any other loss. A replay of what the session sent
// before it went silent reaches no further than that position, and stays
// stale, as every datagram of a session that ended with an END or was
// replaced does.

// retiredSession is a session that ended. next is 0 unless it ended for
// silence: then it is the next sequence number the receiver needed, and
// the fields after it what its stream knew.
type retiredSession struct {
	id       transport.StreamID
	source   netip.AddrPort
	next     uint64
	low      uint64
	lastLive time.Time
	noFlow   bool
}

// resumable returns id's retired session when a datagram from from that
// shows sequence numbers up to reach brings it back.
func (r *Receiver) resumable(id transport.StreamID, from netip.AddrPort, reach uint64) *retiredSession {
	rs := r.findRetired(id)
	switch {
	case rs == nil || rs.next == 0 || reach < rs.next:
		return nil
	case !r.keyed() && from != rs.source:
		return nil
	}
	return rs
}

// resumeStream starts the stream of a session retired for silence again
// where it left off. It announces itself with a new StreamStart, after
// the StreamEnd its silence caused.
func (r *Receiver) resumeStream(rs *retiredSession, from netip.AddrPort) *stream {
	r.stats.Resumed++
	st := r.newStream(rs.id, transport.StreamID{}, from)
	st.synced, st.joining = true, false
	st.next, st.highest, st.low = rs.next, rs.next-1, rs.low
	st.lastLive, st.noFlow = rs.lastLive, rs.noFlow
	rs.next = 0 // resumed once; its stream retires it again when it ends
	return st
}
