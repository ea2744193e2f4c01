package pipe

import (
	"cmp"
	"slices"
	"sort"

	"github.com/brokerless/brokerless/transport"
)

// maxHeldRuns bounds the runs of held positions a Core keeps of one
// source stream (resume.held). Past it the oldest are forgotten, and
// counted (Stats.HeldRunsDropped): a log's positions in them, given
// again, are written again, never taken as held; a feed's first run
// kept reaches down to 0 (see run), so the holes between those
// forgotten are taken as held.
const maxHeldRuns = 1024

// run is a run of a source stream's positions, from to to.
//
// A resume keeps the runs of positions that the destination's records
// read (the tail given to Resume, the pages given to AddPage) hold of
// a source stream, and only those positions are taken as held. A write
// the destination refused while it accepted those after it (a message
// too large, one of a batch) leaves a hole between two runs: taking
// every position up to the last found as held would drop the message
// when the source gives it again, and acknowledge it, though the
// destination never had it. A log's positions older than the oldest
// read are not taken as held either (the hole may be further back),
// and are looked for further back (Core.LookFor). A feed's are: a
// feed is not looked for further back (its publisher's window would
// move on meanwhile), and writing again what its publisher replays
// from its window after a restart, older than the records read, would
// put the feed's positions out of order in the destination, which an
// archive reader (package transport/archive) relies on; a hole of a
// feed older than what Resume read is then taken as held (read at
// least MaxInFlight records of the destination's tail to find every
// hole a refused write can leave). Positions that the source never
// delivers (a log's transaction markers, what compaction removed)
// leave holes too; they cost nothing, as no event falls in them.
type run struct{ from, to uint64 }

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

// runsOf returns, in order, the runs of positions covered by spans
// (in any order, overlapping or not; spans is sorted in place), those
// that touch joined.
func runsOf(spans []run) []run {
	slices.SortFunc(spans, func(a, b run) int { return cmp.Compare(a.from, b.from) })
	var runs []run
	for _, s := range spans {
		if n := len(runs); n > 0 && (s.from <= runs[n-1].to || s.from-runs[n-1].to == 1) {
			runs[n-1].to = max(runs[n-1].to, s.to)
			continue
		}
		runs = append(runs, s)
	}
	return runs
}

// addHeld adds to r.held the positions of spans: a position is held
// when any reading found it held (the destination only grows; what it
// held when read, it holds), and a feed's older than the first run
// (see run). It returns how many of the oldest runs it forgot to keep
// maxHeldRuns.
func (r *resume) addHeld(spans []run) int {
	r.held = runsOf(append(spans, r.held...))
	drop := max(0, len(r.held)-maxHeldRuns)
	if drop > 0 {
		r.held = slices.Delete(r.held, 0, drop)
	}
	if r.feed && len(r.held) > 0 {
		r.held[0].from = 0
	}
	return drop
}

// runAt is the run of r.held that holds pos, ok false when none does.
func (r *resume) runAt(pos uint64) (_ run, ok bool) {
	i := sort.Search(len(r.held), func(i int) bool { return r.held[i].to >= pos })
	if i == len(r.held) || r.held[i].from > pos {
		return run{}, false
	}
	return r.held[i], true
}

// holds reports whether the destination held pos when it was read: in
// one of the runs read.
func (r *resume) holds(pos uint64) bool {
	_, ok := r.runAt(pos)
	return ok
}

// oldest is the first position held, ok false when none is (a stream
// found by its end marker alone).
func (r *resume) oldest() (pos uint64, ok bool) {
	if len(r.held) == 0 {
		return 0, false
	}
	return r.held[0].from, true
}

// firstMissing is the first position from pos on that the destination
// did not hold when it was read.
func (r *resume) firstMissing(pos uint64) uint64 {
	if h, ok := r.runAt(pos); ok && h.to != 1<<64-1 {
		return h.to + 1
	}
	return pos
}
