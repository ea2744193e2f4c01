package reliable

import (
	"net/netip"

	"github.com/brokerless/brokerless/transport"
)

// successor holds the datagrams of a new session of a stream's feed
// that arrived while the stream was still alive, so not yet believed
// (without a key, a new session replaces a stream only once it has
// been silent for ConfirmTime). When the new session replaces the
// stream, they are handed to it in the order they came, the datagram
// that got it believed last, as if they had just arrived
// (Receiver.releaseHeld): the new stream starts at the first of them.
// When the stream ends otherwise (END, silence), they are handed on the
// same way and start the new session's stream. So a publisher that
// restarted quickly loses nothing even when its window has moved past
// its first messages by then: before, they were dropped and recovered
// by NACK from the new publisher's window, which at a fast feed sending
// a datagram a message no longer held them. At most
// ReceiverConfig.HoldBytes are held per stream; the rest is dropped
// (RestartsDeferred) and recovered by NACK as before. Only the session
// heard last is held: a datagram of another one discards what was
// held, so that a forged datagram cannot keep a real restart from being
// held.
type successor struct {
	id    transport.StreamID
	buf   []byte // the datagrams, back to back
	ends  []int  // where each ends in buf
	froms []netip.AddrPort
}

// hold keeps the datagram b of the new session id, from from.
func (st *stream) hold(id transport.StreamID, from netip.AddrPort, b []byte) {
	r := st.r
	h := st.succ
	if h != nil && h.id != id {
		r.stats.RestartsDeferred += uint64(len(h.ends))
		h = nil
	}
	if h == nil {
		h = &successor{id: id}
		st.succ = h
	}
	if len(h.buf)+len(b) > r.cfg.HoldBytes {
		r.stats.RestartsDeferred++
		return
	}
	h.add(from, b)
	r.stats.RestartsHeld++
}

func (h *successor) add(from netip.AddrPort, b []byte) {
	h.buf = append(h.buf, b...)
	h.ends = append(h.ends, len(h.buf))
	h.froms = append(h.froms, from)
}

// release queues what st held for its successor, to be handed to it
// once the datagram or poll being handled is done.
func (st *stream) release() {
	if st.succ != nil {
		st.r.released = append(st.r.released, st.succ)
		st.succ = nil
	}
}

// releaseHeld hands the released datagrams to the Receiver, in the
// order they came: the first creates the new session's stream (or finds
// it, when it is what replaced the old one), the rest fill in behind
// it. Errors are counted as for any datagram.
func (r *Receiver) releaseHeld() {
	for len(r.released) > 0 {
		h := r.released[0]
		r.released = r.released[1:]
		start := 0
		for i, end := range h.ends {
			_ = r.handle(h.froms[i], h.buf[start:end])
			start = end
		}
	}
	r.released = nil
}
