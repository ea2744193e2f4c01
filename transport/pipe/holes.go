package pipe

import (
	"cmp"
	"slices"
	"sort"

	"github.com/brokerless/brokerless/transport"
)

// hole is a run of a source stream's positions, from to to, missing
// between positions that the destination's records read on start hold
// of it. A write the destination refused while it accepted those after
// it (a message too large, one of a batch) leaves one: taking every
// position up to the last found as held would drop the message when
// the source gives it again, and acknowledge it, though the destination
// never had it. Positions that the source never delivers (a log's
// transaction markers, what compaction removed) leave holes too; they
// cost nothing, as no event falls in them.
type hole struct{ from, to uint64 }

// span is the source stream and the positions a record written by a
// pipe covers: a message's origin position, a gap marker's range, an
// end marker's LastSeq (end is true; it covers no position of its own:
// the message or gap marker at LastSeq does). ok and err are as
// position's.
func span(m *transport.Message) (_ transport.StreamID, from, to uint64, end, ok bool, err error) {
	mark, ok, err := transport.ParseMarker(*m)
	switch {
	case err != nil:
		return transport.StreamID{}, 0, 0, false, false, err
	case ok && mark.Kind == transport.EventGap:
		return mark.Gap.Stream, mark.Gap.From, mark.Gap.To, false, true, nil
	case ok:
		return mark.End.Stream, mark.End.LastSeq, mark.End.LastSeq, true, true, nil
	}
	o, ok, err := transport.ParseOrigin(m.Headers)
	if !ok || err != nil {
		return transport.StreamID{}, 0, 0, false, false, err
	}
	return o.Stream, o.Seq, o.Seq, false, true, nil
}

// holesOf returns, in order, the positions missing between the spans
// covered (in any order; spans is sorted in place).
func holesOf(spans []hole) []hole {
	slices.SortFunc(spans, func(a, b hole) int { return cmp.Compare(a.from, b.from) })
	var holes []hole
	var reach uint64 // the last position covered so far
	for i, s := range spans {
		if i > 0 && s.from > reach && s.from-reach > 1 { // reach+1 may wrap
			holes = append(holes, hole{reach + 1, s.from - 1})
		}
		if i == 0 || s.to > reach {
			reach = s.to
		}
	}
	return holes
}

// holds reports whether the destination held pos when the pipe started:
// at or before the last position written, and not in a hole.
func (r *resume) holds(pos uint64) bool {
	if pos > r.last {
		return false
	}
	i := sort.Search(len(r.holes), func(i int) bool { return r.holes[i].to >= pos })
	return i == len(r.holes) || pos < r.holes[i].from
}

// firstMissing is the first position from pos on that the destination
// did not hold when the pipe started.
func (r *resume) firstMissing(pos uint64) uint64 {
	if pos > r.last {
		return pos
	}
	i := sort.Search(len(r.holes), func(i int) bool { return r.holes[i].to >= pos })
	switch {
	case i == len(r.holes):
		return r.last + 1
	case r.holes[i].from <= pos:
		return pos
	}
	return r.holes[i].from
}
