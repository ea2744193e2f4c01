package reliable

import (
	"errors"
	"net/netip"
	"time"
)

// HandleControl processes a datagram that arrived on the sender's
// socket from a receiver: a NACK or a STATUS (flow control, flow.go)
// for this stream. Anything else is counted and ignored; the error says
// why.
//
// For each NACKed range the sender answers, through NextOutgoing, with
// an NCF to the group (so other receivers hold back their own NACKs),
// the repairs (unless the same datagram was repaired within
// RepairLinger), and a LOST notice for any part that has left the
// window, so receivers report the loss at once instead of asking again.
func (s *Sender) HandleControl(now time.Time, from netip.AddrPort, b []byte) error {
	size := len(b)
	b, h, err := s.opener.header(now, b)
	if err != nil {
		s.countBad(err)
		return err
	}
	if h.Type == TypeStatus && h.Stream == s.id {
		st, err := ParseStatus(b)
		if err != nil {
			s.countBad(err)
			return err
		}
		s.flow.status(now, from, st, s.sentNext, s.win.low(s.sentNext))
		return nil
	}
	if h.Type != TypeNack || h.Stream != s.id {
		s.stats.Foreign++
		return errNotForUs
	}
	rr, err := ParseRanges(b)
	if err != nil {
		s.countBad(err)
		return err
	}
	src, full := s.budgets.source(from, now, s.stats.Bytes, s.win.bytes)
	src.last = now
	if full {
		s.stats.NackSourcesFull++
	}
	if !src.nacks.take(now, 1) {
		s.stats.NacksOverBudget++
		return ErrOverBudget
	}
	s.stats.NacksReceived++
	if !full {
		src.got += uint64(size)
		src.keyed = src.keyed || s.opener != nil // its tag checked: a key holder
	}
	s.ranges, s.lost = s.ranges[:0], s.lost[:0]
	low := s.win.low(s.sentNext)
	for i := 0; i < rr.Len(); i++ {
		r := rr.At(i)
		s.stats.NackRanges++
		if r.From >= s.sentNext {
			s.stats.NacksIgnored++
			continue
		}
		r.To = min(r.To, s.sentNext-1)
		if r.From < low {
			s.lost = appendRange(s.lost, Range{r.From, min(r.To, low-1)}, s.maxWire)
			r.From = low
		}
		if r.From <= r.To {
			s.queueRepairs(now, from, src, r)
		}
	}
	s.addNcf(s.ranges)
	s.queueControl(TypeLost, s.lost, &s.stats.LostNotices)
	return nil
}

// queueRepairs queues every datagram overlapping r for repair, as src's
// budget allows, and adds what is coming to the NCF's ranges.
//
// A multicast repair reaches every receiver, so a NACK from another
// receiver within RepairLinger of it most likely crossed it on the way
// and is ignored. A NACK from the receiver that caused the repair is
// not: it waited for the repair and did not get it.
//
// Its work is bounded by what it can queue, not by r: it stops at a
// full repair queue or a spent budget, and counts the datagrams of r it
// did not reach as refused (RepairsQueue, RepairsOverBudget). Otherwise
// each NACK for the whole window, within its source's NACK budget,
// walked every datagram of it while the publisher waited.
func (s *Sender) queueRepairs(now time.Time, from netip.AddrPort, src *nackSource, r Range) {
	uni := s.cfg.UnicastRepairs
	sent := s.win.n - s.win.unsent
	for i := s.win.find(r.From); i >= 0 && i < sent; i++ {
		s.nackVisits++
		d := s.win.at(i)
		if d.first > r.To {
			break
		}
		switch {
		case !uni && d.queued:
			// Already waiting in the queue for the whole group.
		case !uni && !d.lastRepair.IsZero() && d.askedBy != from && now.Sub(d.lastRepair) < s.cfg.RepairLinger:
			s.stats.RepairsLinger++
		case s.repairs.size == len(s.repairs.buf):
			// In the NCF all the same: the publisher is busy, not the
			// source over its budget, so it should ask again soon.
			s.stats.RepairsQueue += s.refused(i, sent, r.To)
			s.ranges = appendRange(s.ranges, Range{max(d.first, r.From), r.To}, s.maxWire)
			return
		case !s.budgets.takeRepair(src, now, s.stats.Bytes, s.win.bytes, len(d.buf)):
			s.stats.RepairsOverBudget += s.refused(i, sent, r.To)
			return
		default:
			s.repairs.push(repairJob{first: d.first, asker: from, unicast: uni})
			d.queued = !uni
		}
		s.ranges = appendRange(s.ranges, Range{max(d.first, r.From), min(d.last(), r.To)}, s.maxWire)
	}
}

// refused is how many of the sent datagrams from index i on hold
// sequence numbers up to to: the part of a NACKed range not queued.
func (s *Sender) refused(i, sent int, to uint64) uint64 {
	j := s.win.find(to)
	if j < 0 || j >= sent {
		j = sent - 1
	}
	return uint64(j - i + 1)
}

// addNcf adds rs to the NCF that the next datagram out will carry, so
// that the NACKs read in one go (a sendmmsg batch apart) are answered by
// one NCF, not one each: under a flood of NACKs, NCFs would otherwise
// multiply the datagrams every subscriber reads. When the NCF is full
// it is queued and another started.
func (s *Sender) addNcf(rs []Range) {
	for _, r := range rs {
		var ok bool
		if s.ncf, ok = insertRange(s.ncf, r, s.maxWire); !ok {
			s.flushNcf()
			s.ncf, _ = insertRange(s.ncf, r, s.maxWire)
		}
	}
}

// flushNcf queues the pending NCF, if any.
func (s *Sender) flushNcf() {
	s.queueControl(TypeNcf, s.ncf, &s.stats.Ncfs)
	s.ncf = s.ncf[:0]
}

// insertRange adds r to the ascending, disjoint list rs, merging it with
// the ranges it touches; it reports false, leaving rs as it was, when
// that would need more than limit ranges.
func insertRange(rs []Range, r Range, limit int) ([]Range, bool) {
	i := 0
	for i < len(rs) && rs[i].To < r.From && rs[i].To+1 != r.From {
		i++
	}
	j := i
	for j < len(rs) && (rs[j].From <= r.To || rs[j].From == r.To+1) {
		r.From, r.To = min(r.From, rs[j].From), max(r.To, rs[j].To)
		j++
	}
	if i == j {
		if len(rs) == limit {
			return rs, false
		}
		rs = append(rs, Range{})
		copy(rs[i+1:], rs[i:])
		rs[i] = r
		return rs, true
	}
	rs[i] = r
	return append(rs[:i+1], rs[j:]...), true
}

func (s *Sender) queueControl(t PacketType, rs []Range, counter *uint64) {
	if len(rs) == 0 {
		return
	}
	b := s.control.slot()
	if b == nil {
		s.stats.ControlDrops++
		return
	}
	s.control.push(AppendRanges(b, t, s.id, rs))
	*counter++
}

func (s *Sender) countBad(err error) {
	switch {
	case err == errReplay:
		s.stats.Replayed++
	case errors.Is(err, ErrUnauthenticated):
		s.stats.Unauthenticated++
	case errors.Is(err, ErrForeign):
		s.stats.Foreign++
	default:
		s.stats.Malformed++
	}
}

// appendRange adds r to the ascending list rs, merging with the last
// range when they touch, and dropping r when rs already holds limit.
func appendRange(rs []Range, r Range, limit int) []Range {
	if n := len(rs); n > 0 && rs[n-1].To+1 >= r.From {
		rs[n-1].To = max(rs[n-1].To, r.To)
		return rs
	}
	if len(rs) == limit {
		return rs
	}
	return append(rs, r)
}
