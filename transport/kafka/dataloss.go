package kafka

import "slices"

// dropLost drops what the subscriber fetched of partition p at or past
// resetTo and has not delivered, queued or pending, when the broker
// reports it lost those offsets: those are the lost records, not the
// ones the broker holds there now, which the client fetches from
// resetTo on. Delivered, they would be records the broker no longer
// has, and the new records at their offsets would then be skipped as
// already delivered. The records queued below resetTo stay: the broker
// still holds them. Called with mu held, before lose.
func (s *Subscriber) dropLost(p int32, resetTo int64) {
	s.queue = slices.DeleteFunc(s.queue, func(q queued) bool {
		return q.r.Partition == p && q.r.Offset >= resetTo
	})
	if s.pendingPart != p || len(s.pending) == 0 || s.pendingOff < resetTo {
		return
	}
	// As a rebalance does (see GroupSubscriber.disown): the partition
	// resumes before the record, after what Receive returned of it.
	st := s.part(p)
	st.next = s.pendingNext
	if st.next >= 0 {
		st.next = max(st.next, st.delivered)
	}
	s.pending = s.pending[:0]
}

// lose records that the broker lost the partition's offsets from
// resetTo on (a data-loss reset, *kgo.ErrDataLoss) and that the client
// resumed there. The offsets delivered from there on were returned by
// Receive and may be acknowledged still, as work the application did,
// but what the broker holds there now (if anything: its log may end
// below them) are other records, not delivered: they keep the range
// [lostFrom, lostTo), which an acknowledgement commits no further into
// than its start (see commitAfter). A second loss before the range was
// acknowledged past widens it. The leader epochs noted from resetTo on
// are forgotten: those offsets have new records, and new epochs.
//
// lose reports whether the commit must go back to resetTo: the
// partition is owned by a GroupSubscriber whose group committed, or
// which marked for commit, an offset past it. That commit would skip
// the records the broker holds from resetTo on, which Receive has not
// returned; floor goes back to resetTo, and the caller moves the
// client's mark there (Subscriber.take). Called with mu held.
func (p *partition) lose(resetTo int64) (rewind bool) {
	if p.delivered > resetTo {
		if p.lostTo > p.lostFrom {
			p.lostFrom, p.lostTo = min(p.lostFrom, resetTo), max(p.lostTo, p.delivered)
		} else {
			p.lostFrom, p.lostTo = resetTo, p.delivered
		}
	}
	// Records fetched below resetTo and not yet delivered (see
	// dropLost) come first.
	if p.next < 0 || p.next > resetTo {
		p.next = resetTo
	}
	p.delivered = min(p.delivered, resetTo)
	// The first mark stays, whatever its offset: the epoch of the
	// offsets below resetTo (see maxEpochMarks for a mark kept that
	// starts after an offset).
	for i := 1; i < len(p.epochs); i++ {
		if p.epochs[i].offset >= resetTo {
			p.epochs = p.epochs[:i]
			break
		}
	}
	if p.owned && p.floor > resetTo {
		p.floor = resetTo
		return true
	}
	return false
}

// acked reports whether an acknowledgement of offset is of an offset
// Receive returned: below what it delivered, or in a range it
// delivered before a broker lost it. Called with mu held.
func (p *partition) acked(offset uint64) bool {
	return p.started && offset < uint64(max(p.delivered, p.lostTo))
}

// commitAfter is the offset an acknowledgement of offset commits: the
// next one, except in a lost range, where offset names two records, the
// one lost and the one the broker holds now, and the acknowledgement
// cannot say which: the range's start, below which the records
// delivered before and after the loss are the same. The record held
// now is then delivered again after a restart rather than skipped
// unprocessed. Called with mu held.
func (p *partition) commitAfter(offset int64) int64 {
	if offset >= p.lostFrom && offset < p.lostTo {
		return p.lostFrom
	}
	return offset + 1
}
