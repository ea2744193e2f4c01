package reliable

import (
	"time"

	"github.com/brokerless/brokerless/transport"
)

// assembly collects the fragments of one message.
type assembly struct {
	active  bool
	skip    bool   // too large or malformed: drop the fragments, report a gap
	bad     bool   // malformed: the fragments carry more bytes than the total announced
	start   uint64 // sequence of the first fragment
	time    int64
	topic   string
	key     []byte
	headers []byte
	nhdrs   int
	total   int
	payload []byte
}

func (a *assembly) reset() {
	a.active, a.skip, a.bad = false, false, false
	a.payload = a.payload[:0]
}

// deliverFrame passes one in-order frame on: a whole message, a
// fragment to assemble, or an orphan fragment whose message start was
// lost.
func (st *stream) deliverFrame(seq uint64, f *Frame) {
	a := &st.asm
	if f.Begin() {
		if a.active {
			st.emitGap(a.start, seq-1, transport.GapOverflow)
		}
		st.joining = false
		if f.End() {
			st.deliver(seq, f.Time, st.r.names.get(f.Topic), f.Key, f.Headers(), f.Chunk)
			return
		}
		st.beginAssembly(seq, f)
		return
	}
	switch {
	case a.active && !a.skip && len(a.payload)+len(f.Chunk) <= a.total:
		a.payload = append(a.payload, f.Chunk...)
	case a.active && !a.skip:
		a.skip, a.bad = true, true // more bytes than its BEGIN announced
	case a.active:
	case st.joining:
		return
	default:
		why := st.lastWhy
		if why == 0 {
			why = transport.GapOverflow
		}
		st.emitGap(seq, seq, why)
		return
	}
	if !f.End() {
		return
	}
	switch {
	case a.bad || !a.skip && len(a.payload) != a.total:
		st.malformed(a.start, seq)
		return
	case a.skip:
		st.r.stats.TooLarge++
		st.emitGap(a.start, seq, transport.GapTooLarge)
		return
	}
	st.deliver(a.start, a.time, a.topic, a.key, HeaderReader{b: a.headers, n: a.nhdrs}, a.payload)
	a.reset()
}

// malformed drops the message of sequence numbers from..to, whose
// fragments disagree with the total length its first one announced: a
// faulty or forged publisher. It is reported as a Gap (GapMalformed)
// and counted (MalformedMessages).
func (st *stream) malformed(from, to uint64) {
	st.r.stats.MalformedMessages++
	st.emitGap(from, to, transport.GapMalformed)
}

func (st *stream) beginAssembly(seq uint64, f *Frame) {
	a := &st.asm
	a.active, a.skip, a.start = true, false, seq
	if f.Total > st.r.cfg.MaxMessageSize {
		a.skip = true
		return
	}
	a.time, a.topic, a.total = f.Time, st.r.names.get(f.Topic), f.Total
	a.key = append(a.key[:0], f.Key...)
	a.headers = append(a.headers[:0], f.headers...)
	a.nhdrs = f.NumHeaders
	a.payload = append(a.payload[:0], f.Chunk...)
}

// deliver hands one message to the handler.
func (st *stream) deliver(seq uint64, t int64, topic string, key []byte, hr HeaderReader, payload []byte) {
	st.flushGap()
	st.start(seq)
	r := st.r
	hdrs := r.hdrs[:0]
	for k, v, ok := hr.Next(); ok; k, v, ok = hr.Next() {
		hdrs = append(hdrs, transport.Header{Key: r.names.get(k), Value: v})
	}
	r.hdrs = hdrs
	if len(hdrs) == 0 {
		hdrs = nil
	}
	if len(key) == 0 {
		key = nil
	}
	// Only the message's part of the event is written (the whole
	// event is 336 bytes, most of them pointers for the write barrier)
	// once the event holds a message already: the other parts are then
	// zero.
	if r.ev.Kind != transport.EventMessage {
		r.ev = transport.Event{Kind: transport.EventMessage}
	}
	// Field by field: a composite literal is built on the stack, then
	// copied over with the write barrier's check of the whole struct.
	m := &r.ev.Message
	m.Stream, m.Seq, m.Time = st.id, seq, time.Unix(0, t)
	m.Topic, m.Key, m.Headers, m.Payload = topic, key, hdrs, payload
	r.stats.Delivered++
	r.h.Deliver(&r.ev)
}

// emitGap reports from..to lost. A message being assembled is lost with
// it. The gap is held back, for at most GapDelay, so that it can grow
// over the orphan fragments and the adjacent losses that follow;
// flushGap delivers it.
func (st *stream) emitGap(from, to uint64, why transport.GapReason) {
	if st.asm.active {
		from = min(from, st.asm.start)
		st.asm.reset()
	}
	st.joining = false
	st.lastWhy = why
	if st.hasPend && st.pend.To+1 == from && st.pend.Reason == why {
		st.pend.To = to
		return
	}
	st.flushGap()
	st.pend = transport.Gap{Stream: st.id, From: from, To: to, Reason: why}
	st.hasPend, st.pendAt = true, st.r.now
}

func (st *stream) flushGap() {
	if !st.hasPend {
		return
	}
	st.hasPend = false
	st.start(st.pend.From)
	r := st.r
	r.stats.Gaps++
	r.stats.GapSeqs += st.pend.Len()
	r.ev = transport.Event{Kind: transport.EventGap, Gap: st.pend}
	r.h.Deliver(&r.ev)
}

// start delivers StreamStart before the stream's first event.
func (st *stream) start(first uint64) {
	if st.started {
		return
	}
	st.started = true
	st.r.ev = transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{
		Stream: st.id, Replaces: st.replaces, FirstSeq: first,
	}}
	st.r.h.Deliver(&st.r.ev)
}
