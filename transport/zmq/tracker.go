package zmq

import (
	"container/list"

	"github.com/brokerless/brokerless/transport"
)

// tracker is a subscriber's bookkeeping of streams, with no I/O: it is
// told what arrived, and on which connection, and says what to deliver,
// and which gaps, starts and ends to report. A stream is one topic of
// one publisher incarnation (Feed, Session). Nothing is reported lost
// before a stream's first message seen: a subscriber joins at the live
// edge. Sequence numbers start at 1 (parseHeader refuses 0).
//
// Several publishers may send the same topic at once (fan-in to a bound
// subscriber, a proxy with several upstream publishers), with the same
// feed or none: each session is a stream of its own, delivered whole. A
// new session of a feed and topic replaces an older one only when that
// one is provably over: it sent its end, or the connection it last came
// on closed before the new session's first message arrived (its
// publisher restarted, or went away). The replaced stream's end is
// reported. Publishers without header frames (Feed 0) never replace one
// another: each connection is its own stream, which ends with it.
//
// Connections are named by a number never reused; disconnected is told,
// in arrival order, after a connection's last message.
type tracker struct {
	maxStreams, maxBytes int
	bytes                int // what the streams cost, as streamCost counts
	streams              map[transport.StreamID]*trackedStream
	// feeds lists, per feed and topic, the streams a later session may
	// replace, oldest first.
	feeds map[feedTopic][]*trackedStream
	lru   list.List // most recently seen first

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
	// conn is the connection the stream last arrived on; gone, that it
	// has closed since.
	conn uint64
	gone bool
	// replaces is the stream this one took over from (zero: none).
	replaces transport.StreamID
	elem     *list.Element
}

// streamCost is about what tracking a stream costs beside its topic:
// the stream, its map and list entries.
const streamCost = 256

func newTracker(maxStreams, maxBytes int) *tracker {
	return &tracker{
		maxStreams: maxStreams,
		maxBytes:   maxBytes,
		streams:    map[transport.StreamID]*trackedStream{},
		feeds:      map[feedTopic][]*trackedStream{},
	}
}

// stream finds or makes the stream id of topic, which arrived on
// connection conn. A new one takes over from a stream of its feed and
// topic that is over, whose end is reported.
func (t *tracker) stream(id transport.StreamID, topic []byte, conn uint64, evs []transport.Event) (*trackedStream, []transport.Event) {
	if st, ok := t.streams[id]; ok {
		t.lru.MoveToFront(st.elem)
		st.conn, st.gone = conn, false
		return st, evs
	}
	cost := streamCost + len(topic)
	for t.lru.Len() > 0 && (len(t.streams) >= t.maxStreams || t.bytes+cost > t.maxBytes) {
		old := t.lru.Remove(t.lru.Back()).(*trackedStream)
		delete(t.streams, old.id)
		t.unlist(old)
		t.bytes -= streamCost + len(old.topic)
		t.evicted++
	}
	t.bytes += cost
	st := &trackedStream{id: id, topic: string(topic), conn: conn}
	st.elem = t.lru.PushFront(st)
	t.streams[id] = st
	if id.Feed == 0 {
		return st, evs
	}
	ft := feedTopic{id.Feed, st.topic}
	list := t.feeds[ft]
	for i := len(list) - 1; i >= 0; i-- {
		old := list[i]
		if !old.ended && !old.gone {
			continue // a publisher sending at the same time
		}
		if !old.ended {
			old.ended = true
			if old.started {
				evs = append(evs, transport.Event{Kind: transport.EventStreamEnd,
					End: transport.StreamEnd{Stream: old.id, LastSeq: old.last, Reason: transport.EndReplaced}})
			}
		}
		st.replaces = old.id
		list = append(list[:i], list[i+1:]...)
		break
	}
	t.feeds[ft] = append(list, st)
	return st, evs
}

// unlist removes st from its feed and topic's list.
func (t *tracker) unlist(st *trackedStream) {
	ft := feedTopic{st.id.Feed, st.topic}
	list := t.feeds[ft]
	for i, s := range list {
		if s == st {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(t.feeds, ft)
	} else {
		t.feeds[ft] = list
	}
}

// data is told that messages first..last of stream id arrived on
// connection conn. It returns the first of them to deliver (those
// before were delivered already), ok false if none is to be.
func (t *tracker) data(id transport.StreamID, topic []byte, conn, first, last uint64, evs []transport.Event) (from uint64, ok bool, _ []transport.Event) {
	st, evs := t.stream(id, topic, conn, evs)
	switch {
	case st.ended:
		t.late++
		return 0, false, evs
	case !st.started:
		st.started = true
		if st.last == 0 {
			st.last = first - 1 // else a heartbeat said where it was
		}
		evs = append(evs, transport.Event{Kind: transport.EventStreamStart,
			Start: transport.StreamStart{Stream: id, Replaces: st.replaces, FirstSeq: st.last + 1}})
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
// heartbeat, or the stream's end, which arrived on connection conn.
// What the stream published and this subscriber did not get is a gap.
func (t *tracker) mark(id transport.StreamID, topic []byte, conn, next uint64, end bool, evs []transport.Event) []transport.Event {
	st, evs := t.stream(id, topic, conn, evs)
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
		// It stays on its feed and topic's list, so that the next
		// session names it in Replaces.
		st.ended = true
		if st.started {
			evs = append(evs, transport.Event{Kind: transport.EventStreamEnd,
				End: transport.StreamEnd{Stream: id, LastSeq: next - 1, Reason: transport.EndClosed}})
		}
	}
	return evs
}

// skip is told that stream id's messages up to last arrived and were not
// for this subscriber (filtered out): none of them is a gap. A stream
// not tracked stays so.
func (t *tracker) skip(id transport.StreamID, last uint64) {
	if st, ok := t.streams[id]; ok && !st.ended && last > st.last {
		st.last = last
	}
}

// disconnected is told that connection conn closed, after its last
// message: the streams that last came on it may be replaced, and those
// of a publisher without header frames (Feed 0), one per connection,
// end.
func (t *tracker) disconnected(conn uint64, evs []transport.Event) []transport.Event {
	for _, st := range t.streams {
		if st.conn != conn || st.ended {
			continue
		}
		st.gone = true
		if st.id.Feed == 0 {
			st.ended = true
			if st.started {
				evs = append(evs, transport.Event{Kind: transport.EventStreamEnd,
					End: transport.StreamEnd{Stream: st.id, LastSeq: st.last, Reason: transport.EndClosed}})
			}
		}
	}
	return evs
}
