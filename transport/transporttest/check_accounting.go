package transporttest

import (
	"fmt"
	"strings"

	"github.com/brokerless/brokerless/transport"
)

// CheckAccounting checks that a recorded event log accounts for every
// stream consistently:
//   - every stream is named as package transport names it: a log's by
//     its topic and partition, with feed and session zero; a direct
//     publisher's by a non-zero session, with no topic or partition;
//   - per stream, delivered sequence numbers and gap ranges are disjoint
//     and in increasing order, and each gap has From <= To and a known
//     reason; one whose size is unknown (transport.Gap.Open,
//     transport.GapStartUnknown) has From == To;
//   - an open gap (transport.Gap.Open) is the last event of its stream
//     but its stream-end, if one comes, whose LastSeq is the gap's
//     From-1;
//   - a stream-start comes at most once, before any message or gap of its
//     stream, and the first of them starts at its FirstSeq (at or after
//     it when contiguous is false); a log's stream may start again (a
//     partition a rebalance gave back to a group member), at a FirstSeq
//     past what was delivered or reported of it, where what follows
//     starts the same way; a stream it replaces is a direct
//     publisher's of the same feed, and delivers no message after it; a
//     log's stream replaces none (a partition is one stream for its
//     whole life);
//   - a stream-end comes at most once, nothing of its stream follows it,
//     and its LastSeq is not below what was delivered.
//
// With contiguous (see Harness.ContiguousSeq) the messages and gaps of a
// stream must also cover every sequence number from the first to the
// last without holes, up to the LastSeq of its stream-end: loss is never
// silent. It returns a *Violation naming the first offending event, or
// nil.
func CheckAccounting(events []transport.Event, contiguous bool) error {
	a := accountant{contiguous: contiguous, streams: map[transport.StreamID]*accounted{}}
	for i, ev := range events {
		if reason := a.add(i, ev); reason != "" {
			return &Violation{Check: "accounting", Event: i, Reason: reason}
		}
	}
	return nil
}

// accounted is what CheckAccounting knows of one stream.
type accounted struct {
	started, ended bool
	firstSeq       uint64
	// any: a message or gap was seen, the highest sequence number being
	// last.
	any  bool
	last uint64
	// open: the last gap was open (transport.Gap.Open), from openFrom.
	open     bool
	openFrom uint64
	// replacedAt is 1 + the index of the stream-start that replaced the
	// stream; 0 while it was not replaced.
	replacedAt int
	// restarted: a log's stream started again, and nothing of it came
	// since: the next message or gap starts at firstSeq.
	restarted bool
}

type accountant struct {
	contiguous bool
	streams    map[transport.StreamID]*accounted
}

func (a *accountant) stream(id transport.StreamID) *accounted {
	s := a.streams[id]
	if s == nil {
		s = &accounted{}
		a.streams[id] = s
	}
	return s
}

// add accounts for event i and returns why it is wrong, or "".
func (a *accountant) add(i int, ev transport.Event) string {
	switch ev.Kind {
	case transport.EventMessage:
		return a.data(ev.Message.Stream, ev.Message.Seq, ev.Message.Seq, true)
	case transport.EventGap:
		g := ev.Gap
		if g.From > g.To {
			return fmt.Sprintf("gap %s: From %d > To %d", g.Stream, g.From, g.To)
		}
		if !knownGapReason(g.Reason) {
			return fmt.Sprintf("%s: unknown reason %d", g, uint8(g.Reason))
		}
		if (g.Open || g.Reason == transport.GapStartUnknown) && g.From != g.To {
			return fmt.Sprintf("%s: From %d, To %d: a gap of unknown size has To = From", g, g.From, g.To)
		}
		if bad := a.data(g.Stream, g.From, g.To, false); bad != "" || !g.Open {
			return bad
		}
		s := a.stream(g.Stream)
		s.open, s.openFrom = true, g.From
		return ""
	case transport.EventStreamStart:
		return a.start(i, ev.Start)
	case transport.EventStreamEnd:
		return a.end(ev.End)
	}
	return fmt.Sprintf("unknown event kind %s", ev.Kind)
}

// data accounts for a message (from == to) or a gap of stream id.
func (a *accountant) data(id transport.StreamID, from, to uint64, message bool) string {
	what := fmt.Sprintf("gap %d..%d", from, to)
	if message {
		what = fmt.Sprintf("message seq %d", from)
	}
	if bad := unnamed(id); bad != "" {
		return fmt.Sprintf("%s of stream %s: %s", what, id, bad)
	}
	s := a.stream(id)
	// atStart: what comes next starts at the FirstSeq of the stream's
	// last stream-start (its first, or a log's second).
	atStart, which := s.restarted || !s.any && s.started, "stream-start"
	if s.restarted {
		which = "second stream-start"
	}
	switch {
	case s.ended:
		return fmt.Sprintf("%s of stream %s after its stream-end", what, id)
	case s.open:
		return fmt.Sprintf("%s of stream %s after its open gap from %d", what, id, s.openFrom)
	case message && s.replacedAt > 0:
		return fmt.Sprintf("%s of stream %s after the stream-start at event %d replaced it", what, id, s.replacedAt-1)
	case s.any && from <= s.last:
		return fmt.Sprintf("%s of stream %s: seq %d was already delivered or reported", what, id, s.last)
	case atStart && a.contiguous && from != s.firstSeq:
		return fmt.Sprintf("%s of stream %s: its %s said FirstSeq %d", what, id, which, s.firstSeq)
	case atStart && from < s.firstSeq:
		return fmt.Sprintf("%s of stream %s: before FirstSeq %d of its %s", what, id, s.firstSeq, which)
	case s.any && !atStart && a.contiguous && from != s.last+1:
		return fmt.Sprintf("%s of stream %s: seq %d..%d neither delivered nor reported", what, id, s.last+1, from-1)
	}
	s.any, s.last, s.restarted = true, to, false
	return ""
}

func (a *accountant) start(i int, st transport.StreamStart) string {
	if bad := unnamed(st.Stream); bad != "" {
		return fmt.Sprintf("stream-start of %s: %s", st.Stream, bad)
	}
	s := a.stream(st.Stream)
	switch {
	case s.started && st.Stream.Topic != "" && !s.ended && !s.open:
		// A log's stream started again: past what came of it.
		if s.any && st.FirstSeq <= s.last {
			return fmt.Sprintf("second stream-start of %s at FirstSeq %d: seq %d was already delivered or reported", st.Stream, st.FirstSeq, s.last)
		}
		if !st.Replaces.IsZero() {
			return fmt.Sprintf("stream-start of %s replaces %s: a log's partition is one stream for its whole life", st.Stream, st.Replaces)
		}
		s.firstSeq, s.restarted = st.FirstSeq, s.any
		return ""
	case s.started:
		return fmt.Sprintf("second stream-start of %s", st.Stream)
	case s.any:
		return fmt.Sprintf("stream-start of %s after messages or gaps of it", st.Stream)
	case s.ended:
		return fmt.Sprintf("stream-start of %s after its stream-end", st.Stream)
	}
	s.started, s.firstSeq = true, st.FirstSeq
	if st.Replaces.IsZero() {
		return ""
	}
	switch {
	case st.Stream.Topic != "":
		return fmt.Sprintf("stream-start of %s replaces %s: a log's partition is one stream for its whole life", st.Stream, st.Replaces)
	case st.Replaces == st.Stream:
		return fmt.Sprintf("stream-start of %s replaces itself", st.Stream)
	case st.Replaces.Topic != "":
		return fmt.Sprintf("stream-start of %s replaces %s, a log's stream", st.Stream, st.Replaces)
	case st.Replaces.Feed != st.Stream.Feed:
		return fmt.Sprintf("stream-start of %s replaces %s of another feed", st.Stream, st.Replaces)
	}
	if old := a.stream(st.Replaces); old.replacedAt == 0 {
		old.replacedAt = i + 1
	}
	return ""
}

func (a *accountant) end(e transport.StreamEnd) string {
	if bad := unnamed(e.Stream); bad != "" {
		return fmt.Sprintf("stream-end of %s: %s", e.Stream, bad)
	}
	s := a.stream(e.Stream)
	switch {
	case s.ended:
		return fmt.Sprintf("second stream-end of %s", e.Stream)
	case s.open && e.LastSeq != s.openFrom-1:
		return fmt.Sprintf("stream-end of %s: LastSeq %d after an open gap from %d, want %d", e.Stream, e.LastSeq, s.openFrom, s.openFrom-1)
	case s.open:
	case s.any && e.LastSeq < s.last:
		return fmt.Sprintf("stream-end of %s: LastSeq %d, but seq %d was delivered or reported", e.Stream, e.LastSeq, s.last)
	case s.any && a.contiguous && e.LastSeq > s.last:
		return fmt.Sprintf("stream-end of %s: seq %d..%d neither delivered nor reported", e.Stream, s.last+1, e.LastSeq)
	}
	s.ended = true
	return ""
}

// unnamed says what is wrong with the name of stream id, or "": a log's
// stream has a topic (any partition) and no feed or session; a direct
// publisher's has a session and no topic or partition.
func unnamed(id transport.StreamID) string {
	switch {
	case id.Topic != "" && (id.Feed != 0 || id.Session != 0):
		return "names both a log's partition and a publisher's feed and session"
	case id.Topic == "" && id.Partition != 0:
		return fmt.Sprintf("partition %d without a topic", id.Partition)
	case id.Topic == "" && id.Session == 0:
		return "zero session and no topic"
	}
	return ""
}

// knownGapReason reports whether package transport defines r: only
// reasons it does not define print as GapReason(n).
func knownGapReason(r transport.GapReason) bool {
	return !strings.HasPrefix(r.String(), "GapReason(")
}
