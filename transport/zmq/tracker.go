package zmq

import (
	"container/list"

	"github.com/brokerless/brokerless/transport"
)

// tracker is a subscriber's bookkeeping of streams, with no I/O: it is
// told what arrived and says what to deliver, and which gaps, starts and
// ends to report. A stream is one topic of one publisher incarnation
// (Feed, Session); a new session of the same feed and topic replaces
// the old one. Nothing is reported lost before a stream's first message
// seen: a subscriber joins at the live edge.
type tracker struct {
	maxStreams int
	streams    map[transport.StreamID]*trackedStream
	current    map[feedTopic]transport.StreamID
	lru        list.List // most recently seen first

	duplicates, late, evicted uint64
}

type feedTopic struct {
	feed  uint32
	topic string
}

type trackedStream struct {
	id    transport.StreamID
	topic string
	// last is the last sequence number delivered or given up (0: none).
	last    uint64
	started bool // a StreamStart was reported
	ended   bool
	elem    *list.Element
}

func newTracker(maxStreams int) *tracker {
	return &tracker{
		maxStreams: maxStreams,
		streams:    map[transport.StreamID]*trackedStream{},
		current:    map[feedTopic]transport.StreamID{},
	}
}

// stream finds or makes the stream id of topic; a new one replaces the
// current stream of its feed and topic, whose end is reported.
func (t *tracker) stream(id transport.StreamID, topic []byte, evs []transport.Event) (*trackedStream, []transport.Event) {
	if st, ok := t.streams[id]; ok {
		t.lru.MoveToFront(st.elem)
		return st, evs
	}
	if len(t.streams) >= t.maxStreams {
		old := t.lru.Remove(t.lru.Back()).(*trackedStream)
		delete(t.streams, old.id)
		if ft := (feedTopic{old.id.Feed, old.topic}); t.current[ft] == old.id {
			delete(t.current, ft)
		}
		t.evicted++
	}
	st := &trackedStream{id: id, topic: string(topic)}
	st.elem = t.lru.PushFront(st)
	t.streams[id] = st
	ft := feedTopic{id.Feed, st.topic}
	if prev, ok := t.current[ft]; ok {
		if old := t.streams[prev]; old != nil && !old.ended {
			old.ended = true
			if old.started {
				evs = append(evs, transport.Event{Kind: transport.EventStreamEnd,
					End: transport.StreamEnd{Stream: prev, LastSeq: old.last, Reason: transport.EndReplaced}})
			}
		}
	}
	return st, evs
}

// data is told that messages first..last of stream id arrived. It
// returns the first of them to deliver (those before were delivered
// already), ok false if none is to be.
func (t *tracker) data(id transport.StreamID, topic []byte, first, last uint64, evs []transport.Event) (from uint64, ok bool, _ []transport.Event) {
	st, evs := t.stream(id, topic, evs)
	switch {
	case st.ended:
		t.late++
		return 0, false, evs
	case !st.started:
		st.started = true
		ft := feedTopic{id.Feed, st.topic}
		replaces := t.current[ft]
		t.current[ft] = id
		if st.last == 0 {
			st.last = first - 1 // else a heartbeat said where it was
		}
		evs = append(evs, transport.Event{Kind: transport.EventStreamStart,
			Start: transport.StreamStart{Stream: id, Replaces: replaces, FirstSeq: st.last + 1}})
	}
	if last <= st.last {
		t.duplicates++
		return 0, false, evs
	}
	if first > st.last+1 {
		evs = append(evs, t.gap(st, first-1))
	}
	from = max(first, st.last+1)
	st.last = last
	return from, true, evs
}

// gap reports st's messages after the last delivered up to to as lost.
func (t *tracker) gap(st *trackedStream, to uint64) transport.Event {
	g := transport.Gap{Stream: st.id, From: st.last + 1, To: to, Reason: transport.GapNoRecovery}
	st.last = to
	return transport.Event{Kind: transport.EventGap, Gap: g}
}

// lost is told that messages from..to of stream id, which data let
// through, could not be decoded.
func (t *tracker) lost(id transport.StreamID, from, to uint64) transport.Event {
	return transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: id, From: from, To: to, Reason: transport.GapNoRecovery}}
}

// mark is told that stream id's next sequence number is next: a
// heartbeat, or the stream's end. What the stream published and this
// subscriber did not get is a gap.
func (t *tracker) mark(id transport.StreamID, topic []byte, next uint64, end bool, evs []transport.Event) []transport.Event {
	st, evs := t.stream(id, topic, evs)
	if st.ended {
		t.late++
		return evs
	}
	if !st.started {
		// Joined between messages: nothing before was this
		// subscriber's to lose.
		st.last = max(st.last, next-1)
	} else if next-1 > st.last {
		evs = append(evs, t.gap(st, next-1))
	}
	if end {
		// It stays its feed and topic's current stream, so that the
		// next session names it in Replaces.
		st.ended = true
		if st.started {
			evs = append(evs, transport.Event{Kind: transport.EventStreamEnd,
				End: transport.StreamEnd{Stream: id, LastSeq: next - 1, Reason: transport.EndClosed}})
		}
	}
	return evs
}
