package transport

import "fmt"

// EventKind says which field of an [Event] is set.
type EventKind uint8

const (
	// EventMessage carries a message in Event.Message.
	EventMessage EventKind = iota + 1
	// EventGap reports unrecoverable loss in Event.Gap.
	EventGap
	// EventStreamStart reports a new stream in Event.Start.
	EventStreamStart
	// EventStreamEnd reports that a stream ended in Event.End.
	EventStreamEnd
)

func (k EventKind) String() string {
	switch k {
	case EventMessage:
		return "message"
	case EventGap:
		return "gap"
	case EventStreamStart:
		return "stream-start"
	case EventStreamEnd:
		return "stream-end"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is what a [Subscriber] receives: a message, a gap, or a change in
// the set of streams. Only the field named by Kind is meaningful.
type Event struct {
	Kind    EventKind
	Message Message
	Gap     Gap
	Start   StreamStart
	End     StreamEnd
}

// Gap reports that messages From..To (inclusive) of Stream will never be
// delivered. Most gaps are loss; a gap left by log compaction is not
// (Lost says which).
type Gap struct {
	Stream   StreamID
	From, To uint64
	Reason   GapReason
	// Open marks a gap with no known end: the stream ended before the
	// subscriber learnt its last sequence number, and whatever it
	// published from From on (perhaps nothing) will never be
	// delivered. A multicast subscriber reports one when its archive
	// lacks the tail of a session whose publisher crashed and the live
	// feed never said where that session ended (package multicast,
	// "Archive"). An open gap is the last event of its stream before
	// the StreamEnd, whose LastSeq is From-1: as far as the subscriber
	// knows. To is From, so that code unaware of Open sees a gap that
	// starts where it should and ends in order, and Len is 0: how many
	// messages it covers is unknown. The zero value: a closed gap. A
	// gap marker (GapMarker) does not carry it: an open gap written to a
	// log is a marker of From alone.
	Open bool
}

// Len is the number of sequence numbers the gap covers; 0 for an open
// gap (Open) and for one whose start is unknown (GapStartUnknown),
// whose size is unknown.
func (g Gap) Len() uint64 {
	if g.Open || g.Reason == GapStartUnknown {
		return 0
	}
	return g.To - g.From + 1
}

// Lost reports whether the gap's messages were lost: every reason but
// GapCompacted, whose messages were superseded by later ones.
func (g Gap) Lost() bool { return g.Reason != GapCompacted }

func (g Gap) String() string {
	what := "lost"
	if !g.Lost() {
		what = "not lost"
	}
	if g.Open {
		return fmt.Sprintf("gap %s seq %d.. (end unknown, %s): %s", g.Stream, g.From, what, g.Reason)
	}
	if g.Reason == GapStartUnknown {
		return fmt.Sprintf("gap %s seq ..%d (start unknown, %s): %s", g.Stream, g.To, what, g.Reason)
	}
	return fmt.Sprintf("gap %s seq %d..%d (%d %s): %s", g.Stream, g.From, g.To, g.Len(), what, g.Reason)
}

// GapReason says why a gap could not be recovered.
type GapReason uint8

const (
	// GapUnrecoverable: the publisher no longer holds the messages (they
	// fell out of its retransmit window) and said so.
	GapUnrecoverable GapReason = iota + 1
	// GapTimeout: repair requests went unanswered for too long.
	GapTimeout
	// GapOverflow: the subscriber's bounded buffers could not hold the
	// messages that followed the loss, so it gave up on the loss to stay
	// at the live edge.
	GapOverflow
	// GapStreamEnded: the stream ended or was replaced by a new session
	// (a publisher restart) before the loss was repaired.
	GapStreamEnded
	// GapNoRecovery: the transport does not retransmit (at-most-once
	// delivery with gap reports).
	GapNoRecovery
	// GapTooLarge: the message exceeds the subscriber's size limit.
	GapTooLarge
	// GapRetention: a log deleted the records (retention by age or size)
	// before the subscriber read them.
	GapRetention
	// GapCompacted: log compaction removed the records, each superseded
	// by a later record with the same key. Not loss: the latest value of
	// every key is still delivered.
	GapCompacted
	// GapSourceDown: whatever fed this stream from another one (a pipe,
	// a recorder) was down, and its source no longer held the messages
	// when it came back. Written by the pipe as a gap marker, so readers
	// of the destination see the hole.
	GapSourceDown
	// GapOutpaced: the publisher runs without flow control and its
	// retransmit window moved past messages this subscriber had not got
	// yet (it fell behind, or was stopped). A publisher with flow
	// control waits for its subscribers instead.
	GapOutpaced
	// GapNotArchived: the publisher no longer held the messages, and the
	// subscriber's archive (the log a recorder writes the feed to) has no
	// record of them either: no message and no gap marker, and none was
	// appended while the subscriber waited.
	GapNotArchived
	// GapMalformed: the messages arrived, but malformed (a fragmented
	// message whose fragments carry more or fewer bytes than its first
	// one announced): a faulty or forged publisher. A repair would bring
	// the same bytes, so none is asked for.
	GapMalformed
	// GapStartUnknown: a subscriber asked for history from a time (a
	// multicast subscriber's JoinTime), and neither its archive nor the
	// live feed told where that time falls in the stream: the messages
	// published from it up to To, perhaps none, were not delivered, and
	// how many is unknown. From is To (the last position that may be
	// one of them), and Len is 0, as for an open gap (Open).
	GapStartUnknown
)

func (r GapReason) String() string {
	switch r {
	case GapUnrecoverable:
		return "unrecoverable: outside the publisher's retransmit window"
	case GapTimeout:
		return "recovery timed out"
	case GapOverflow:
		return "subscriber buffers full"
	case GapStreamEnded:
		return "stream ended before repair"
	case GapNoRecovery:
		return "transport does not retransmit"
	case GapTooLarge:
		return "message larger than the subscriber accepts"
	case GapRetention:
		return "deleted by the log's retention before it was read"
	case GapCompacted:
		return "compacted: superseded by a later record with the same key"
	case GapOutpaced:
		return "unrecoverable: the publisher, which runs without flow control, moved its retransmit window past them"
	case GapSourceDown:
		return "the pipe feeding this stream was down longer than its source kept the messages"
	case GapNotArchived:
		return "not in the archive either"
	case GapMalformed:
		return "malformed: its fragments disagree with the length it announced"
	case GapStartUnknown:
		return "not archived, and where the join time falls unknown: those published from it on, perhaps none"
	}
	return fmt.Sprintf("GapReason(%d)", uint8(r))
}

// StreamStart reports the first message or heartbeat seen from a stream.
// Replaces is non-zero when the stream took over its feed from an earlier
// session: the publisher restarted. Messages of the two sessions are never
// mixed: nothing of Replaces is delivered after this event.
//
// A log's stream (one with a topic: a partition) may start again, with
// no StreamEnd before: a consumer-group member that a rebalance took the
// partition from and gave back starts it again, since another member may
// have delivered from it meanwhile. Such a start's FirstSeq is past what
// was delivered or reported of the stream before it, with no Gap for
// what lies between (the other member's); a consumer that keeps state
// per stream (a pipe's view of its destination) takes it up again
// there. A publisher's stream starts once.
type StreamStart struct {
	Stream   StreamID
	Replaces StreamID
	// FirstSeq is the first sequence number the subscriber will deliver.
	FirstSeq uint64
}

// StreamEnd reports that a stream will deliver nothing more.
type StreamEnd struct {
	Stream StreamID
	// LastSeq is the last sequence number the stream published, as far as
	// the subscriber knows.
	LastSeq uint64
	Reason  EndReason
}

// EndReason says why a stream ended.
type EndReason uint8

const (
	// EndClosed: the publisher closed the stream cleanly.
	EndClosed EndReason = iota + 1
	// EndReplaced: a new session of the same feed took over.
	EndReplaced
	// EndIdle: nothing, not even a heartbeat, arrived for too long.
	EndIdle
)

func (r EndReason) String() string {
	switch r {
	case EndClosed:
		return "closed by publisher"
	case EndReplaced:
		return "replaced by a new session"
	case EndIdle:
		return "publisher silent"
	}
	return fmt.Sprintf("EndReason(%d)", uint8(r))
}
