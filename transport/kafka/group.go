package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// GroupSubscriber is a member of a consumer group (Config.Group): the
// group's members share the topic's partitions, and each partition
// starts at the offset the group committed (Config.From where there is
// none: an offset past the partition's end starts at the end, as for a
// Subscriber; a committed offset past it is reset to the log start,
// as Kafka's auto.offset.reset=earliest does). It commits only what the application acknowledged with Ack:
//
//   - Ack(stream, seq) marks every offset of the partition up to seq as
//     processed; marks are committed every 5 s (kgo's autocommit
//     interval: kgo.AutoCommitInterval in Config.Options changes it),
//     before a rebalance takes a partition away, and by Close.
//   - What was delivered but not acknowledged when the member stops —
//     Close, a crash, a rebalance — is delivered again to the partition's
//     next owner, which starts at the last commit. Acknowledgements made
//     in the moments before a crash, not yet committed, are delivered
//     again too: at least once, never at most once.
//   - A rebalance drops what the member kept for the partitions it lost,
//     records fetched and not yet received included. A partition that
//     comes back to the same member resumes after what that member
//     delivered (Stats.AlreadyDelivered counts what it skips), so a member
//     never delivers an offset twice, and starts again: a StreamStart at
//     the offset it resumes from (the group's commit, when that is
//     further), before its first event, as another member may have
//     delivered from it meanwhile (a pipe reads its destination again
//     at each start). A revocation sends no StreamEnd.
//
// A gap marker's record, delivered as the Gap it stands for, is
// acknowledged with the next message of its partition (Ack is
// cumulative); one that is the last record is delivered again after a
// restart.
type GroupSubscriber struct {
	*Subscriber
	groupName string
	// instance is Config.Instance: a static member's ID.
	instance string
	// atEnd, for a From offset, holds the partitions of the last offset
	// fetch the group committed nothing for and whose end is below
	// From, with that end: adjustStarts starts them there. Under mu.
	atEnd map[int32]int64
	// closeErr is the first Close's result, written inside once: every
	// Close returns it.
	closeErr error
	// closeCommitted is closed once Close's commit has returned: a
	// revocation during Close waits for it (see awaitCloseCommit).
	closeCommitted chan struct{}
	// closing, when set (by a test), is called by Close once it has
	// begun, before its commit.
	closing func()
	// acks orders Acks with Close's commit.
	acks ackGate
	// acking, when set (by a test), is called by Ack once it has found
	// the subscriber open.
	acking func()
	// closeRemarks, under mu, are the kept marks (partition.remark) of
	// the partitions a revocation dropped once Close had begun: Close's
	// commit carries them (see remarks), as the revocation waits for it.
	closeRemarks map[int32]kgo.EpochOffset
	// remarksDone is closed once commitRemarksEvery has returned.
	remarksDone chan struct{}
}

var (
	_ transport.Subscriber   = (*GroupSubscriber)(nil)
	_ transport.Acknowledger = (*GroupSubscriber)(nil)
)

// epochMark says that offsets from offset on have leader epoch epoch,
// which a commit names with its offset.
type epochMark struct {
	offset int64
	epoch  int32
}

// maxEpochMarks bounds the leader epochs a partition keeps between two
// acknowledgements; past it the oldest are forgotten, and an
// acknowledgement older than every mark kept commits with the oldest
// epoch kept (a later one, which only weakens the broker's truncation
// check for that commit).
const maxEpochMarks = 64

// noteEpoch records that offset has leader epoch epoch.
func (p *partition) noteEpoch(offset int64, epoch int32) {
	if n := len(p.epochs); n > 0 && p.epochs[n-1].epoch == epoch {
		return
	}
	if len(p.epochs) == maxEpochMarks {
		p.epochs = append(p.epochs[:0], p.epochs[1:]...)
	}
	p.epochs = append(p.epochs, epochMark{offset, epoch})
}

// epochOf returns the leader epoch of offset and forgets the marks
// before it, which no later acknowledgement needs.
func (p *partition) epochOf(offset int64) int32 {
	i := 0
	for i+1 < len(p.epochs) && p.epochs[i+1].offset <= offset {
		i++
	}
	if i == len(p.epochs) {
		return -1
	}
	p.epochs = append(p.epochs[:0], p.epochs[i:]...)
	return p.epochs[0].epoch
}

// NewGroupSubscriber joins cfg.Group as a consumer of cfg.Topic.
func NewGroupSubscriber(ctx context.Context, cfg Config) (*GroupSubscriber, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Group == "" {
		return nil, &ConfigError{"Group", `""`, "a group member needs a group"}
	}
	s := newSubscriber(cfg)
	g := &GroupSubscriber{Subscriber: s, groupName: cfg.Group, instance: cfg.Instance, closeCommitted: make(chan struct{})}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeStartOffset(cfg.From.kgo()),
		kgo.AutoCommitMarks(),
		// Rebalances wait while a poll's records are on their way to
		// the queue, where OnPartitionsRevoked finds them.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(g.assigned),
		kgo.OnOffsetsFetched(g.offsetsFetched),
		kgo.OnPartitionsRevoked(g.revoked),
		kgo.OnPartitionsLost(g.lost),
		kgo.AutoCommitCallback(g.autoCommitted),
	}
	if cfg.From.kind == posOffset {
		// A From offset past a partition's end would be out of range,
		// which the client resets to the log start, replaying it all:
		// such a partition starts at its end instead, as a Subscriber's
		// does. The client's reset is left alone: it also serves a
		// committed offset out of the log.
		opts = append(opts, kgo.AdjustFetchOffsetsFn(g.adjustStarts))
	}
	if cfg.Instance != "" {
		opts = append(opts, kgo.InstanceID(cfg.Instance))
	}
	if cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(cfg.SessionTimeout))
	}
	if cfg.RebalanceTimeout > 0 {
		opts = append(opts, kgo.RebalanceTimeout(cfg.RebalanceTimeout))
	}
	err := s.connect(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	interval, _ := g.cl.OptValue(kgo.AutoCommitInterval).(time.Duration)
	if interval <= 0 {
		interval = 5 * time.Second // the client's default
	}
	g.remarksDone = make(chan struct{})
	go g.commitRemarksEvery(interval, g.remarksDone)
	return g, nil
}

// Ack acknowledges every offset of stream (a partition of the topic) up
// to and including seq, which must have been delivered: Receive has
// returned its event, not only events before it (the partition's
// StreamStart, a Gap), else Ack returns ErrNotDelivered. It marks the
// offset after seq for the next commit and returns; Close commits what
// is marked. Acknowledging a partition a rebalance has taken from this
// member does nothing (Stats.AcksNotOwned): its new owner delivers again
// what was not committed. Nor does acknowledging an offset below one
// acknowledged already, or below the group's commit when the partition
// was assigned (a late acknowledgement of what this member delivered
// before a rebalance took the partition away and gave it back): the
// commit never goes back.
//
// After a broker lost offsets this member had delivered (Receive's
// *kgo.ErrDataLoss; the partition resumes at the reset point, below
// them), an acknowledgement of one of them is taken, as the work done
// that it is, but commits the reset point at most: the broker holds
// other records there now, or none — a commit past its log end makes
// the next owner's client find the offset out of range, or, with the
// leader epoch it carries, report the loss again, and a commit past
// records written since would skip them. Those offsets name two
// records until the partition is acknowledged past them, the one lost
// and the one delivered since, and an Ack does not say which: an Ack
// of one commits the reset point, and the new record is delivered
// again after a restart rather than skipped. An Ack never commits past
// a record Receive has not returned. For the same reason the loss moves
// back a commit past the reset point that was marked (an Ack made
// before the loss) or made (the group's): the next commit — periodic,
// before a rebalance, or Close's — writes the reset point, whatever the
// leader epoch of the mark (on logd, always unknown), so the records
// the broker holds from there on go to the next owner if this member
// stops before Receive returns them. The loss also commits the reset
// point at once, after any commit in flight with the old mark (see
// commitRewind).
//
// While the commit before a rebalance is under way, Ack waits for the
// rebalance to drop the partitions it takes, or for ctx to end: it
// then returns ctx's error, and made no mark.
//
// An Ack that returns nil is in the next commit, Close's included; an
// Ack that meets Close returns transport.ErrClosed when Close's commit
// may not carry it (Close did not wait for it: see ackGate).
func (g *GroupSubscriber) Ack(ctx context.Context, stream transport.StreamID, seq uint64) error {
	if !g.acks.enter(g.closed) {
		return transport.ErrClosed
	}
	if g.acking != nil {
		g.acking()
	}
	marked, err := g.ack(ctx, stream, seq)
	if late := g.acks.leave(); late && marked {
		return fmt.Errorf("%w: the acknowledgement of offset %d of %s was made as Close committed, and may not be committed", transport.ErrClosed, seq, stream)
	}
	return err
}

// ack is Ack's work: it reports whether it marked an offset for commit.
// While a revocation commits, it waits for the revocation to end, or
// for ctx: an Ack that returns ctx's error made no mark.
func (g *GroupSubscriber) ack(ctx context.Context, stream transport.StreamID, seq uint64) (marked bool, err error) {
	if stream.Topic != g.topic || stream.Feed != 0 || stream.Session != 0 {
		return false, fmt.Errorf("%w: %s is not a partition of topic %q", ErrNotDelivered, stream, g.topic)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.awaitRevocation(ctx); err != nil {
		return false, err
	}
	st := g.parts[stream.Partition]
	if st == nil || !st.acked(seq) {
		return false, fmt.Errorf("%w: offset %d of %s", ErrNotDelivered, seq, stream)
	}
	if !st.owned {
		g.stats.AcksNotOwned++
		return false, nil
	}
	commit := st.commitAfter(int64(seq))
	if commit <= st.floor {
		// Below the group's commit or an acknowledgement made: nothing
		// to commit. Left to the client, such a mark would move the
		// commit back whenever the epoch it carries is later than the
		// commit's (the client orders marks by epoch first).
		return false, nil
	}
	st.floor = commit
	st.remark = kgo.EpochOffset{Epoch: st.epochOf(commit - 1), Offset: commit}
	if !st.fetching && !st.rewinding {
		g.remark(stream.Partition, st)
	}
	return true, nil
}

// assigned: the member now owns ps. The leader epochs of what it
// delivered of them before are kept: an acknowledgement of such an
// offset, made once the partition is back, must carry its epoch, as
// franz-go drops a mark of unknown epoch (-1) behind a commit that has
// one (it orders marks by epoch first).
func (g *GroupSubscriber) assigned(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range ps[g.topic] {
		st := g.part(p)
		st.owned, st.fetching, st.remark, st.assignedAt = true, true, kgo.EpochOffset{}, -1
	}
}

// offsetsFetched learns where the group committed each partition, where
// the next record is expected: a record past it follows a Gap. A
// committed offset wins over From; a partition that comes back to this
// member resumes after what it delivered, if that is further. For a
// From offset, it also asks where the partitions without a commit end
// (see adjustStarts); an error there ends the group session, and the
// client joins again.
func (g *GroupSubscriber) offsetsFetched(ctx context.Context, cl *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	var uncommitted []int32
	g.mu.Lock()
	for _, t := range resp.Topics {
		if t.Topic != g.topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				continue
			}
			st := g.part(p.Partition)
			// An acknowledgement made before the partition came back
			// to this member, below what the group committed since,
			// must not move the commit back; one made since it came
			// back, and above, is kept (see partition.fetching).
			if st.remark.Offset > max(p.Offset, 0) {
				st.floor = st.remark.Offset
			} else {
				st.floor, st.remark = max(p.Offset, 0), kgo.EpochOffset{}
			}
			st.assignedAt = p.Offset // -1: none, unknown
			if p.Offset < 0 {
				uncommitted = append(uncommitted, p.Partition)
				continue
			}
			if !st.started || p.Offset > st.next {
				st.next = p.Offset
			}
		}
	}
	g.atEnd = nil
	g.mu.Unlock()
	if g.start < 0 || len(uncommitted) == 0 {
		return nil
	}
	// The end is the high watermark (ListOffsets read_uncommitted), not
	// the last stable offset, whatever isolation level the client
	// fetches at (Config.Options): the question is whether the client
	// would find From out of range and reset it to the log start, and a
	// broker judges that against the log's end, under read_committed
	// too. The last stable offset would move a From between it and the
	// high watermark — offsets that are in the log, and whose records a
	// read_committed fetch delivers once their transactions end — back
	// to it, delivering records below From. On logd the two are one:
	// it has no transactions (see the package documentation).
	ends, err := listOffsets(ctx, cl, g.topic, uncommitted, -1)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, end := range ends {
		if end >= 0 && g.start > end {
			if g.atEnd == nil {
				g.atEnd = map[int32]int64{}
			}
			g.atEnd[p] = end
		}
	}
	return nil
}

// adjustStarts starts the partitions offsetsFetched found without a
// commit and ending below From at their end, where the client would
// start them at From, out of range, and then reset them to the log
// start. The partition's events say so: its StreamStart is at the end,
// below From, and the Subscriber logs it (see emit).
func (g *GroupSubscriber) adjustStarts(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, end := range g.atEnd {
		if _, ok := offsets[g.topic][p]; ok {
			offsets[g.topic][p] = kgo.NewOffset().At(end)
		}
	}
	g.atEnd = nil
	return offsets, nil
}

// revoked: a rebalance takes ps away. What was acknowledged is committed
// first, so the next owner starts after it; then the member forgets
// what it kept for ps. Close ends that commit: the client, which runs
// one such commit at a time, would have Close's own commit wait for it,
// and it has no deadline (ctx is the client's); what it carried, Close
// commits, so that commit ended is not counted as failed. A revocation
// that finds Close begun leaves the commit to Close, and returns once
// Close's commit has (see awaitCloseCommit).
//
// After a data loss, the commit of its reset point (commitRewind) is
// answered first: it follows any commit in flight with the old mark,
// which the revocation's own commit may not (see commitRewind), and
// the next owner starts at what the group committed. Neither wait has
// a deadline of its own, and one would not free the member: the client
// sends its JoinGroup only once every commit in flight is answered
// (they hold its join lock), and a commit queued behind an unanswered
// one waits for it whatever its context, so the member is held as
// long as the broker leaves the first commit unanswered, at most the
// client's request timeouts (kgo.RequestTimeoutOverhead,
// kgo.RetryTimeout); past the group's rebalance timeout the broker
// drops the member and refuses its commits of that generation, the
// reset point's and the old mark's alike. Returning before the reset
// point's commit holds that lock could let it go out in the next
// generation, for a partition this member may no longer own.
func (g *GroupSubscriber) revoked(ctx context.Context, _ *kgo.Client, ps map[string][]int32) {
	defer g.awaitCloseCommit() // after mu is released
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-g.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	g.rewindMu.Lock()
	g.awaitRewind(ctx)
	g.rewindMu.Unlock()
	// Acks and Receive wait, within their contexts, from here until
	// ps are dropped: no mark after the commit read them, no record
	// of ps delivered meanwhile. They do not wait for mu, which is
	// free while the commit waits for the broker.
	g.mu.Lock()
	revoking := make(chan struct{})
	g.revoking = revoking
	g.mu.Unlock()
	select {
	case <-g.closed: // Close commits
	default:
		if err := g.commitMarked(ctx); err != nil && !g.endedByClose(err) {
			g.commitErrors.Add(1)
			g.log.Warn("kafka transport: commit before a rebalance failed: the next owner delivers again what was acknowledged since the last commit",
				"group", g.groupName, "err", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Subscriber.closing() {
		g.keepForClose(ps[g.topic])
	}
	g.disown(ps[g.topic])
	g.revoking = nil
	close(revoking)
}

// keepForClose keeps for Close's commit the marks Acks kept of ps
// (partition.remark), which a revocation during Close is about to drop:
// the revocation left its commit to Close, or Close ended it, and waits
// for Close's commit before it returns (awaitCloseCommit), so the
// partitions are still this member's when that commit is made. Called
// with mu held.
func (g *GroupSubscriber) keepForClose(ps []int32) {
	for _, p := range ps {
		if st := g.parts[p]; st != nil && st.owned && st.remark.Offset != 0 {
			if g.closeRemarks == nil {
				g.closeRemarks = map[int32]kgo.EpochOffset{}
			}
			g.closeRemarks[p] = st.remark
		}
	}
}

// awaitCloseCommit waits, if Close has begun, until its commit has
// returned. The client forgets what was acknowledged of the partitions
// a revocation takes once it returns: a revocation that left the commit
// to Close, or whose commit Close ended, and returned before Close's
// commit read the marks, would have Close commit nothing of them, and
// the next owner deliver them again. Close's commit is bounded
// (closeFlush).
func (g *GroupSubscriber) awaitCloseCommit() {
	select {
	case <-g.closed:
	default:
		return
	}
	g.log.Debug("kafka transport: a revocation during Close waits for Close's commit", "group", g.groupName)
	<-g.closeCommitted
}

// endedByClose reports whether err, of the commit before a revocation,
// is Close ending it: no failure, as Close commits what it carried (and
// counts its own failure).
func (g *GroupSubscriber) endedByClose(err error) bool {
	select {
	case <-g.closed:
		return errors.Is(err, context.Canceled)
	default:
		return false
	}
}

// lost: the member was dropped from the group (a session timeout, a
// fatal error); committing would fail, so it only forgets.
func (g *GroupSubscriber) lost(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.disown(ps[g.topic])
}

// disown drops the state of partitions ps and their records not yet
// received. Called with mu held.
func (g *GroupSubscriber) disown(ps []int32) {
	gone := map[int32]bool{}
	for _, p := range ps {
		gone[p] = true
		if st := g.parts[p]; st != nil {
			st.owned = false // its epochs stay: see assigned
			// Another member may deliver from it meanwhile: given
			// back, it starts again (see emit).
			st.restart = st.started
		}
	}
	n := len(g.queue)
	g.queue = slices.DeleteFunc(g.queue, func(q queued) bool { return gone[q.r.Partition] })
	g.stats.Disowned += uint64(n - len(g.queue))
	if gone[g.pendingPart] && len(g.pending) > 0 {
		// The record pending came from was not delivered in full (its
		// first event, which step returned, may be its StreamStart or
		// a Gap before it): if the partition comes back, it resumes at
		// that record, not after it — after a Gap before it that step
		// returned, which its new start does not report again.
		st := g.part(g.pendingPart)
		st.next = g.pendingNext
		if st.next >= 0 {
			st.next = max(st.next, st.delivered)
		}
		for _, ev := range g.pending {
			if ev.Kind == transport.EventMessage || ev.Kind == transport.EventGap {
				g.stats.Disowned++
			}
		}
		g.pending = g.pending[:0]
	}
}

// Close commits what was acknowledged, leaves the group and disconnects,
// each step bounded (a few seconds) when the broker does not answer.
// What a rebalance under way takes away is in that commit too: a
// revocation that finds Close begun leaves its commit to Close.
// It returns the commit's error: the acknowledgements since the last
// commit are then delivered again to the next owner. After a data
// loss, an error wrapping ErrResetNotCommitted says that the commit of
// its reset point was not answered in time: a commit made before the
// loss, past that point and unanswered too, may land after Close, and
// the next owner then skips the records the broker holds from there
// on (an operator can set the group's offset back to the reset point
// the error names). A leave that
// fails is only logged: the group drops the member at its session
// timeout instead. A Close called while another runs waits for it;
// every Close returns the first one's result.
func (g *GroupSubscriber) Close() error {
	g.once.Do(func() {
		close(g.closed)
		if g.closing != nil {
			g.closing()
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeFlush)
		defer cancel()
		// The Acks under way mark first, within half the commit's
		// time: a commit whose deadline the wait used up would fail
		// even with nothing to carry.
		dctx, dcancel := context.WithTimeout(ctx, closeFlush/2)
		g.acks.drain(dctx)
		dcancel()
		// A data loss's rewind under way (take) is finished first: the
		// commit writes its reset point, not the mark past it. The
		// periodic commit of kept marks has returned (it holds
		// rewindMu around its commits, bounded, and stops on closed).
		g.rewindMu.Lock()
		g.awaitRewind(ctx)
		cerr := g.commitMarked(ctx)
		unanswered := g.rewindUnanswered()
		g.rewindMu.Unlock()
		close(g.closeCommitted)
		switch {
		case unanswered != nil:
			// A commit before it, of a mark past the reset point,
			// may still be made: no later commit follows it.
			g.closeErr = fmt.Errorf("%w by Close's deadline (reset point by partition: %v): a commit past it, made before the loss, may land after it, and the next owner skip the records from there on (commit on close: %v)",
				ErrResetNotCommitted, unanswered, cerr)
			g.commitErrors.Add(1)
			g.log.Error("kafka transport: Close gave up waiting for the commit of a data loss's reset point: the group's commit may stay past it, skipping records",
				"group", g.groupName, "topic", g.topic, "reset", unanswered)
		case cerr != nil:
			g.closeErr = fmt.Errorf("kafka transport: commit on close: %w", cerr)
			g.commitErrors.Add(1)
		}
		// The client's Close leaves the group with no deadline, and
		// waits for the leave: with a broker that takes connections
		// but does not answer, for minutes. Leaving first, bounded,
		// makes its leave a no-op that waits for this one (the first
		// leave's context is the one its LeaveGroup request uses).
		lctx, lcancel := context.WithTimeout(context.Background(), closeFlush)
		defer lcancel()
		if lerr := g.cl.LeaveGroupContext(lctx); lerr != nil {
			g.log.Warn("kafka transport: leaving the group on close failed: the group drops this member at its session timeout",
				"group", g.groupName, "err", lerr)
		}
		g.cl.Close()
		<-g.remarksDone
	})
	return g.closeErr
}
