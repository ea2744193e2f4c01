package kafka

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitRewind commits the reset points of a data loss, rewind, which
// SetOffsets has just made the client's marks, without waiting for the
// commit. The client issues commits one after another: this one goes
// after any in flight, which may carry the old mark, past the reset
// point. Left to the next commit (the periodic one, seconds later, or
// Close's), the group's commit would stay past the reset point until
// then — a member that stops meanwhile has the next owner skip the
// records the broker holds from there on — and for good when that next
// commit has nothing to carry: the client counts the mark as committed
// when the last commit it saw answered before the one in flight wrote
// the same offset and epoch (on logd, whose epochs are unknown, a
// commit of the reset point). Issuing it may wait (the client holds
// commits during a rebalance's join, and an asynchronous one while a
// synchronous one runs), so it is issued from a goroutine. Close waits
// for it to be answered (awaitRewind), within its deadline: its own
// commit may have nothing to carry, and leaving the group first would
// have the broker refuse this one. Once issued it runs on, as the
// periodic commit does, bounded by the client's request timeouts. A
// failure is counted and logged; the marks stay, and the next commit
// carries them. Called with rewindMu held.
func (s *Subscriber) commitRewind(rewind map[int32]kgo.EpochOffset) {
	// This commit goes after those issued before: answered, it says
	// they were too.
	pending := map[int32]int64{}
	if s.rewindUnanswered() != nil {
		maps.Copy(pending, s.rewindPending)
	}
	for p, eo := range rewind {
		pending[p] = eo.Offset
	}
	done := make(chan struct{})
	s.rewindDone, s.rewindPending = done, pending
	offsets := map[string]map[int32]kgo.EpochOffset{s.topic: rewind}
	go func() {
		s.cl.CommitOffsets(context.Background(), offsets,
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				defer close(done)
				err = commitErr(resp, err)
				if err == nil || errors.Is(err, kgo.ErrClientClosed) && s.closing() {
					return
				}
				s.commitErrors.Add(1)
				s.log.Warn("kafka transport: commit of a data loss's reset point failed: the next commit retries it",
					"topic", s.topic, "err", err)
			})
	}()
}

// remarkRewound makes the marks Acks kept (partition.rewinding) while
// the client's marks of the partitions of rewind were moved back.
func (s *Subscriber) remarkRewound(rewind map[int32]kgo.EpochOffset) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range rewind {
		if st := s.parts[p]; st != nil {
			st.rewinding = false
			if !st.fetching {
				s.remark(p, st)
			}
		}
	}
}

// awaitRewind waits, until ctx ends, for the last commit of a data
// loss's reset points to be answered. Called with rewindMu held.
func (s *Subscriber) awaitRewind(ctx context.Context) {
	if s.rewindDone == nil {
		return
	}
	select {
	case <-s.rewindDone:
	case <-ctx.Done():
	}
}

// rewindUnanswered returns the reset points (by partition) of the
// commits of data losses not yet answered, nil when none is waiting.
// Called with rewindMu held.
func (s *Subscriber) rewindUnanswered() map[int32]int64 {
	if s.rewindDone == nil {
		return nil
	}
	select {
	case <-s.rewindDone:
		return nil
	default:
		return s.rewindPending
	}
}

// closing reports whether Close has begun.
func (s *Subscriber) closing() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

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

// staleLoss reports whether a GroupSubscriber must not act on loss
// (drop what it queued, move the group's commit back), and logs it:
// the client keeps the loss reports of a session that ended (a
// rebalance) for the next poll, which may come once the partition is
// another member's, or back with this one. Such a report predates the
// partition's current assignment: it is of a partition not owned, or
// from an offset below where the current assignment started, which its
// fetches never go below before a loss of their own. Acted on, it would
// move the group's commit, which the partition's owners advanced since,
// back to its reset point. It is still returned (take): the broker did
// lose what it reports, and the member that owned the partition
// meanwhile may not have seen it (on logd, whose leader epochs are
// unknown, a fetch from an offset the broker now holds other records
// at finds nothing wrong): this report may be the only one of that
// loss. The first loss taken in an assignment makes the next ones
// undecidable: they are acted on. Called with mu held.
func (s *Subscriber) staleLoss(loss *kgo.ErrDataLoss) bool {
	if !s.group {
		return false
	}
	st := s.parts[loss.Partition]
	switch {
	case st == nil || !st.owned:
	case st.assignedAt >= 0 && loss.ConsumedTo < st.assignedAt:
	default:
		st.assignedAt = -1
		return false
	}
	s.log.Warn("kafka transport: a data-loss report from before the partition's current assignment: returned, the group's commit not moved back",
		"topic", s.topic, "partition", loss.Partition, "consumedTo", loss.ConsumedTo, "resetTo", loss.ResetTo)
	return true
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
	if p.remark.Offset > resetTo {
		// An Ack's mark not yet made (see partition.fetching): the
		// rewind commits the reset point instead.
		p.remark = kgo.EpochOffset{}
	}
	if p.owned && p.floor > resetTo {
		p.floor, p.rewinding = resetTo, true
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
