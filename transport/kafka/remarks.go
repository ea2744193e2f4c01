package kafka

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remarkSet is what Acks marked while the client did not take marks of
// their partitions (see partition.fetching), read at one moment: the
// offsets by partition, and the member and generation that owned them
// then.
type remarkSet struct {
	member  string
	gen     int32
	offsets map[int32]kgo.EpochOffset
}

// remark marks for commit what an Ack kept in st.remark, for the
// client's next commit. Called with mu held.
func (s *Subscriber) remark(p int32, st *partition) {
	if st.remark.Offset == 0 {
		return
	}
	s.cl.MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset{s.topic: {p: st.remark}})
	st.remark = kgo.EpochOffset{}
}

// remarks returns what Acks marked while the client did not take marks
// (see partition.fetching), and marks it again: a partition whose
// commit the client has fetched since takes the mark. commitRemarks
// commits them too, for a partition the client does not take marks of
// (without a commit, until its first records are polled). The marks
// kept of partitions a revocation dropped during Close (closeRemarks)
// are among them. Called with mu held: the partitions are owned, in
// the generation it reads.
func (g *GroupSubscriber) remarks() remarkSet {
	var rs remarkSet
	if len(g.closeRemarks) > 0 {
		rs.offsets = maps.Clone(g.closeRemarks)
	}
	for p, st := range g.parts {
		if st.owned && st.remark.Offset != 0 {
			if rs.offsets == nil {
				rs.offsets = map[int32]kgo.EpochOffset{}
			}
			rs.offsets[p] = st.remark
		}
	}
	if rs.offsets != nil {
		rs.member, rs.gen = g.cl.GroupMetadata()
		g.cl.MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset{g.topic: rs.offsets})
	}
	return rs
}

// remarkRetryBackoff is the wait between two tries of commitRemarks
// after a retriable error.
const remarkRetryBackoff = 50 * time.Millisecond

// commitRemarks commits rs, if it holds offsets, in the generation it
// was read in: the broker refuses it (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID) after a rejoin, which may have given a partition
// to another member, whose commit it would move back. The client's
// commits take the generation current when they are sent, so it sends
// its own request, and retries it itself, until ctx ends, when the
// error is retriable (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS:
// a coordinator moving or loading; coordinator finds the new one), as
// the client does its own, for closeFlush at most: a revocation's ctx
// has no deadline. The periodic commit does not retry (see
// commitRemarksEvery).
func (g *GroupSubscriber) commitRemarks(ctx context.Context, rs remarkSet) error {
	if len(rs.offsets) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, closeFlush)
	defer cancel()
	for {
		err := g.commitRemarksOnce(ctx, rs)
		if err == nil || !kerr.IsRetriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(remarkRetryBackoff):
		}
	}
}

// commitRemarksOnce sends rs, if it holds offsets, to the group's
// coordinator once.
func (g *GroupSubscriber) commitRemarksOnce(ctx context.Context, rs remarkSet) error {
	if len(rs.offsets) == 0 {
		return nil
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = g.groupName, rs.member, rs.gen
	if g.instance != "" {
		req.InstanceID = &g.instance
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = g.topic
	for p, eo := range rs.offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	coordinator, err := g.coordinator(ctx)
	if err != nil {
		return err
	}
	resp, err := g.cl.Broker(int(coordinator)).Request(ctx, commitByName{req})
	if err != nil {
		return err
	}
	return commitErr(resp.(*kmsg.OffsetCommitResponse), nil)
}

// coordinator returns the broker ID of the group's coordinator.
func (g *GroupSubscriber) coordinator(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = g.groupName, []string{g.groupName}
	resp, err := req.RequestWith(ctx, g.cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Coordinators) > 0 { // version 4 on
		c := resp.Coordinators[0]
		return c.NodeID, kerr.ErrorForCode(c.ErrorCode)
	}
	return resp.NodeID, kerr.ErrorForCode(resp.ErrorCode)
}

// commitByName is an OffsetCommit request of a version that names
// topics (9 at most: from 10 on a request names them by ID). The
// client sends a request of another type than its own to one broker
// only, not to the group's coordinator: see coordinator.
type commitByName struct{ *kmsg.OffsetCommitRequest }

func (commitByName) MaxVersion() int16 { return 9 }

// commitRemarksEvery commits what Acks marked while the client did not
// take marks (see remarks) every interval, the client's periodic
// commit's, until Close: the client's own commit does not carry them,
// and a partition may fetch nothing new for hours. It holds rewindMu
// around each commit, as Close does around its own: a data loss's
// rewind (take) is not passed by a mark read before it, and Close's
// commit, after which it commits nothing, is not overtaken by an older
// one. It tries each commit once: take waits for rewindMu, and a
// retriable refusal is retried at the next interval. done is closed
// once it returns.
func (g *GroupSubscriber) commitRemarksEvery(interval time.Duration, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-g.closed:
			return
		case <-t.C:
		}
		g.rewindMu.Lock()
		if g.Subscriber.closing() { // Close's commit carries them
			g.rewindMu.Unlock()
			return
		}
		g.mu.Lock()
		rs := g.remarks()
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), closeFlush)
		err := g.commitRemarksOnce(ctx, rs)
		cancel()
		g.rewindMu.Unlock()
		if err != nil && !(errors.Is(err, kgo.ErrClientClosed) && g.Subscriber.closing()) {
			g.commitErrors.Add(1)
			g.log.Warn("kafka transport: periodic commit of acknowledgements kept for a partition not fetched since it came back failed: the next commit retries it",
				"group", g.groupName, "err", err)
		}
	}
}
