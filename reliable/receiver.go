package reliable

import (
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Handler receives what a Receiver produces. The Receiver calls it
// synchronously from HandleDatagram and Poll; the event, the datagram
// and every slice they hold are valid only during the call.
type Handler interface {
	// Deliver is called with each event, in order per stream.
	Deliver(ev *transport.Event)
	// SendNack asks for the NACK datagram b to be sent to the
	// publisher at to.
	SendNack(to netip.AddrPort, b []byte)
	// SendStatus asks for the STATUS datagram b (flow control) to be
	// sent to the publisher at to.
	SendStatus(to netip.AddrPort, b []byte)
}

// Receiver is the subscribing half of the protocol, without I/O. It
// tracks up to MaxStreams streams; for each it detects gaps, NACKs them
// as ranges after a randomized back-off, holds back NACKs when an NCF or
// the repair shows up first, discards duplicates, delivers messages in
// order (reassembling fragments) and reports a Gap for whatever cannot be
// recovered. A new session on a known feed is a publisher restart: once
// the old stream has fallen silent (at once with a key), it is closed
// out and never mixed with the new one.
//
// Feed it with HandleDatagram; call Poll no later than Deadline. A
// Receiver is not safe for concurrent use.
type Receiver struct {
	cfg     ReceiverConfig
	streams []*stream
	retired [64]retiredSession
	nretire int

	frames []Frame
	ev     transport.Event
	hdrs   []transport.Header
	names  interner
	nack   []byte
	status []byte
	ranges []Range

	h        Handler
	now      time.Time
	datagram []byte       // the datagram being handled, after its tag (successor.go)
	released []*successor // held datagrams to hand on once the current one is done
	stats    ReceiverStats

	sealer *sealer // tags NACKs; nil without a key
	opener *opener // checks datagrams; nil without a key
}

// NewReceiver returns a Receiver with no streams yet.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Receiver{
		cfg:    cfg,
		names:  newInterner(4096),
		nack:   make([]byte, 0, rangesHead+cfg.NackRanges*rangeLen+TrailerLen),
		status: make([]byte, 0, statusLen+TrailerLen),
		ranges: make([]Range, 0, cfg.NackRanges),
	}
	if r.cfg.ID == 0 {
		r.cfg.ID = cfg.Rand.Uint64() | 1 // never 0
	}
	if cfg.Key != nil {
		key := append([]byte(nil), cfg.Key...)
		r.sealer = newSealer(key)
		r.opener = newOpener(key, max(16, cfg.MaxStreams), cfg.ListenSince)
	}
	return r, nil
}

// keyed reports whether datagrams are authenticated: then what they
// claim comes from a key holder and is believed at once.
func (r *Receiver) keyed() bool { return r.opener != nil }

// Stats returns the counters.
func (r *Receiver) Stats() ReceiverStats { return r.stats }

var (
	errUnexpectedNack   = &DecodeError{ErrForeign, "NACK sent to a receiver"}
	errUnexpectedStatus = &DecodeError{ErrForeign, "STATUS sent to a receiver"}
)

// HandleDatagram processes one datagram from the network. from is its
// source: the publisher's address, where NACKs go. Errors say why a
// datagram was ignored (it is also counted); they never stop the
// Receiver.
//
// It runs no timers, even when Deadline has passed: a caller that reads
// datagrams in batches hands it the whole batch first, then calls Poll,
// so that an NCF or a repair that arrived in the batch is seen before a
// NACK timer that expired while the caller was not running fires.
func (r *Receiver) HandleDatagram(now time.Time, from netip.AddrPort, b []byte, h Handler) error {
	r.h, r.now = h, now
	defer r.finish()
	err := r.handle(netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), b)
	r.releaseHeld()
	return err
}

// handle is HandleDatagram's work, also done for the datagrams a
// stream held for its successor (successor.go).
func (r *Receiver) handle(from netip.AddrPort, b []byte) error {
	b, hd, err := r.opener.header(r.now, b)
	if err != nil {
		r.countBad(err)
		return err
	}
	r.datagram = b
	if len(r.cfg.Feeds) > 0 && !slices.Contains(r.cfg.Feeds, hd.Stream.Feed) {
		r.stats.Filtered++
		return nil
	}
	switch hd.Type {
	case TypeData:
		var dh DataHead
		if dh, r.frames, err = ParseData(b, r.frames); err != nil {
			break
		}
		top := dh.FirstSeq + uint64(dh.Count) - 1
		st := r.lookup(hd.Stream, from, top, true)
		if st == nil {
			break
		}
		if !st.synced {
			if dh.Repair && !st.fromStart() {
				// A repair for another receiver says nothing of where
				// the publisher is now: the first live datagram places
				// the stream (JoinLive at its live edge).
				r.stats.RepairsBeforeStart++
				break
			}
			st.syncData(dh, r.frames)
		}
		if !st.admit(top, !dh.Repair) {
			break
		}
		r.stats.Datagrams++
		st.heard()
		if !dh.Repair {
			st.contradictEnd(top, false)
		}
		st.noFlow = dh.NoFlow
		st.onData(dh, r.frames, b)
		st.tookBytes(len(b))
	case TypeHeartbeat, TypeEnd:
		var beat Beat
		if beat, err = ParseBeat(b); err != nil {
			break
		}
		st := r.lookup(hd.Stream, from, beat.Next-1, hd.Type == TypeHeartbeat)
		if st == nil {
			break
		}
		if hd.Type == TypeEnd {
			r.stats.Datagrams++
			st.heard()
			if st.onEnd(beat) {
				r.removeStream(slices.Index(r.streams, st))
			}
			break
		}
		if !st.synced {
			st.sync(beat.Next, beat.Low)
		}
		if !st.admit(beat.Next-1, true) {
			break
		}
		r.stats.Datagrams++
		r.stats.Heartbeats++
		st.heard()
		st.contradictEnd(beat.Next-1, true)
		st.onBeat(beat)
	case TypeNcf, TypeLost:
		var rr RangeReader
		if rr, err = ParseRanges(b); err != nil {
			break
		}
		if st := r.lookup(hd.Stream, from, 0, false); st != nil {
			r.stats.Datagrams++
			st.heard()
			if hd.Type == TypeNcf {
				st.onNcf(rr)
			} else {
				st.onLost(rr)
			}
		}
	case TypeNack:
		err = errUnexpectedNack
	case TypeStatus:
		err = errUnexpectedStatus
	default:
		err = errNotForUs
	}
	if err != nil {
		r.countBad(err)
		return err
	}
	return nil
}

// Poll runs the timers due at now: NACKs and their retries, recovery
// timeouts, STATUS, and the end of streams that fell silent.
func (r *Receiver) Poll(now time.Time, h Handler) {
	r.h, r.now = h, now
	defer r.finish()
	r.poll()
	r.releaseHeld()
}

func (r *Receiver) poll() {
	for i := 0; i < len(r.streams); {
		st := r.streams[i]
		switch {
		case st.ending && (!r.now.Before(st.endDue()) || r.now.Sub(st.lastHeard) >= r.cfg.IdleTimeout):
			// Nothing contradicted the END: the stream is over.
			st.closeEnded()
			r.removeStream(i)
			continue
		case r.now.Sub(st.lastHeard) >= r.cfg.IdleTimeout:
			st.end(transport.EndIdle)
			r.removeStream(i)
			continue
		}
		if !st.nackAt.IsZero() && !r.now.Before(st.nackAt) {
			st.nackDue()
		}
		if st.hasPend && !r.now.Before(st.pendAt.Add(r.cfg.GapDelay)) {
			st.flushGap()
		}
		st.statusDue()
		i++
	}
}

// finish forgets the handler and the datagram.
func (r *Receiver) finish() { r.h, r.datagram = nil, nil }

// Deadline is when Poll next has work, or the zero Time when there are
// no streams.
func (r *Receiver) Deadline() time.Time {
	var d time.Time
	for _, st := range r.streams {
		d = earliest(d, st.lastHeard.Add(r.cfg.IdleTimeout))
		d = earliest(d, st.nackAt)
		if st.ending {
			d = earliest(d, st.endDue())
		}
		if st.hasPend {
			d = earliest(d, st.pendAt.Add(r.cfg.GapDelay))
		}
		d = earliest(d, st.statusDeadline())
	}
	return d
}

// lookup finds the stream of id, checking that from is its source
// (reach is the highest sequence number the datagram shows sent: 0 for
// an NCF or LOST; see sourceOK). Another session of the feed replaces the feed's stream (a publisher
// restart) when create is set and that stream has fallen silent (see
// admit.go); a session that ended or was replaced is stale. A new feed's
// stream is created, when create is set and there is room, tied to from.
func (r *Receiver) lookup(id transport.StreamID, from netip.AddrPort, reach uint64, create bool) *stream {
	for i, st := range r.streams {
		if st.id.Feed != id.Feed {
			continue
		}
		if st.id.Session == id.Session {
			if !st.sourceOK(from, reach) {
				return nil
			}
			return st
		}
		switch {
		case !create || r.isRetired(id) || (r.keyed() && id.Session < st.id.Session):
			r.stats.Stale++
			return nil
		case !r.keyed() && !st.silent():
			if id.Session > st.id.Session {
				st.hold(id, from, r.datagram)
			} else {
				r.stats.Stale++
			}
			return nil
		}
		st.end(transport.EndReplaced)
		r.stats.Restarts++
		r.streams[i] = r.newStream(id, st.id, from)
		if h := st.succ; h != nil && h.id == id {
			// The new stream takes what was held of it, then this
			// datagram, in the order they came (successor.go).
			h.add(from, r.datagram)
			r.stats.RestartsHeld++
			st.release()
			return nil
		}
		st.release()
		return r.streams[i]
	}
	var resume *retiredSession
	if create {
		resume = r.resumable(id, from, reach)
	}
	switch {
	case !create || (resume == nil && r.isRetired(id)):
		r.stats.Stale++
		return nil
	case len(r.streams) >= r.cfg.MaxStreams:
		r.stats.StreamDrops++
		return nil
	}
	var st *stream
	if resume != nil {
		st = r.resumeStream(resume, from)
	} else {
		st = r.newStream(id, r.lastEnded(id), from)
	}
	r.streams = append(r.streams, st)
	return st
}

// lastEnded is the most recent ended session of id's feed older than id,
// which a new session of the feed replaces.
func (r *Receiver) lastEnded(id transport.StreamID) transport.StreamID {
	for i := r.nretire - 1; i >= max(0, r.nretire-len(r.retired)); i-- {
		old := r.retired[i%len(r.retired)].id
		if old.Feed == id.Feed && old.Session < id.Session {
			return old
		}
	}
	return transport.StreamID{}
}

func (r *Receiver) newStream(id, replaces transport.StreamID, from netip.AddrPort) *stream {
	r.stats.Streams++
	return &stream{
		r:         r,
		id:        id,
		replaces:  replaces,
		source:    from,
		lastHeard: r.now,
		lastLive:  r.now,
		statusAt:  r.now, // the first STATUS goes once the stream is placed
		joining:   true,
		gaps:      newGapSet(r.cfg.MaxGaps),
		held:      newReorder(r.cfg.ReorderFrames, r.cfg.ReorderBytes),
	}
}

// removeStream forgets the stream at i; what it held for a new session
// of its feed is handed on (successor.go).
func (r *Receiver) removeStream(i int) {
	r.streams[i].release()
	r.streams = slices.Delete(r.streams, i, i+1)
}

// retire remembers a session that ended, so its late datagrams are
// dropped instead of starting it again (see resume.go for the one
// exception: a session that ended only because it fell silent).
func (r *Receiver) retire(rs retiredSession) {
	if old := r.findRetired(rs.id); old != nil {
		*old = rs
		return
	}
	r.retired[r.nretire%len(r.retired)] = rs
	r.nretire++
}

func (r *Receiver) isRetired(id transport.StreamID) bool { return r.findRetired(id) != nil }

func (r *Receiver) findRetired(id transport.StreamID) *retiredSession {
	for i := range r.retired[:min(r.nretire, len(r.retired))] {
		if r.retired[i].id == id {
			return &r.retired[i]
		}
	}
	return nil
}

func (r *Receiver) countBad(err error) {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		r.stats.Unauthenticated++
	case errors.Is(err, ErrForeign):
		r.stats.Foreign++
	default:
		r.stats.Malformed++
	}
}
