package reliable

import (
	"time"

	"github.com/brokerless/brokerless/transport"
)

// gap is a run of missing sequence numbers and the state of its repair.
type gap struct {
	from, to   uint64
	nackAt     time.Time // when to NACK next
	nacked     bool      // a NACK for it has been sent
	unanswered int       // NACKs sent since the last NCF for it: backs off the next
	giveUpAt   time.Time // recovery deadline, however often NCFs postpone it
	lost       transport.GapReason
}

// gapSet is the ascending, disjoint, bounded list of a stream's missing
// ranges.
type gapSet struct {
	g   []gap
	max int
}

func newGapSet(max int) gapSet { return gapSet{g: make([]gap, 0, min(max, 64)), max: max} }

func (s *gapSet) len() int { return len(s.g) }

func (s *gapSet) full() bool { return len(s.g) >= s.max }

// find returns the index of the gap holding seq, or -1.
func (s *gapSet) find(seq uint64) int {
	lo, hi := 0, len(s.g)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.g[mid].to < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(s.g) && s.g[lo].from <= seq {
		return lo
	}
	return -1
}

// add appends a gap above every other; the caller makes room first.
func (s *gapSet) add(g gap) { s.g = append(s.g, g) }

// splitAt makes seq the first sequence of its gap, splitting that gap
// in two. It reports false when that needs room the set lacks.
func (s *gapSet) splitAt(seq uint64) bool {
	i := s.find(seq)
	if i < 0 || s.g[i].from == seq {
		return true
	}
	if s.full() {
		return false
	}
	s.g = append(s.g, gap{})
	copy(s.g[i+1:], s.g[i:])
	s.g[i].to = seq - 1
	s.g[i+1].from = seq
	return true
}

// remove takes seq out of its gap. It reports false when seq is in no
// gap, or sits inside one and the set has no room to split it.
func (s *gapSet) remove(seq uint64) bool {
	i := s.find(seq)
	if i < 0 {
		return false
	}
	g := &s.g[i]
	switch {
	case g.from == g.to:
		s.g = append(s.g[:i], s.g[i+1:]...)
	case g.from == seq:
		g.from++
	case g.to == seq:
		g.to--
	default:
		if !s.splitAt(seq) {
			return false
		}
		s.g[i+1].from++
	}
	return true
}

// markLost gives up on every missing sequence in from..to, splitting
// gaps at the edges when there is room (else whole gaps are given up).
func (s *gapSet) markLost(from, to uint64, why transport.GapReason) {
	s.splitAt(from)
	if to < ^uint64(0) {
		s.splitAt(to + 1)
	}
	for i := range s.g {
		g := &s.g[i]
		if g.from > to {
			break
		}
		if g.to >= from && g.lost == 0 {
			g.lost = why
		}
	}
}

func (s *gapSet) popFront() { s.g = append(s.g[:0], s.g[1:]...) }
