package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// Subscriber consumes a topic without a consumer group, from a position
// (Config.From): it can replay, and it commits nothing, so it has no
// Ack — acknowledging would have nowhere to go. A consumer that must
// resume where its processing stopped is a GroupSubscriber.
//
// Receive delivers, per partition in offset order: a StreamStart before
// the partition's first event, each record as a message, and a Gap for
// offsets skipped (see the package documentation for their reasons). A
// record that is a gap marker (transport.GapMarker, written by a pipe)
// is delivered as the Gap it stands for, of the marker's origin stream,
// and an end marker (transport.EndMarker) as that stream's StreamEnd.
type Subscriber struct {
	cl *kgo.Client
	// admin sends the subscriber's own requests (DescribeConfigs): cl,
	// or what a test puts in its place.
	admin requester
	// now is the clock of the policy requests' backoff: time.Now, or a
	// test's.
	now   func() time.Time
	topic string
	sem   transport.Semantics
	log   *slog.Logger
	group bool
	// start is where a partition not yet seen is expected to start: an
	// exact From offset, or -1. earliest: From is Earliest, so a
	// partition is expected to start at its log start.
	start    int64
	earliest bool

	// rewindMu is held by take from before it takes mu until the
	// client's marks a data loss moves back are moved (see lose), and
	// by a GroupSubscriber's Close around its commit: a Close that
	// begins meanwhile commits the reset point, not the mark past it
	// that no later commit would correct. Taken before mu.
	rewindMu sync.Mutex
	// rewindDone, under rewindMu, is closed once the last commit of a
	// data loss's reset points is answered (see commitRewind).
	rewindDone chan struct{}
	// rewindPending, under rewindMu, holds the reset point of each
	// partition whose commit rewindDone, once closed, says answered.
	rewindPending map[int32]int64

	mu sync.Mutex
	// policy is the topic's cleanup policy, learned on the first hole
	// that needs it (see learnPolicy).
	policy  cleanupPolicy
	queue   []queued // records fetched, not yet turned into events
	pending []transport.Event
	// pendingPart is the partition of the record pending came from,
	// pendingOff its offset; pendingNext is that partition's next
	// before the record: where it resumes if a rebalance drops pending.
	pendingPart int32
	pendingOff  int64
	pendingNext int64
	parts       map[int32]*partition
	stats       Stats // CommitErrors excepted: see commitErrors
	// commitErrors is Stats.CommitErrors of a GroupSubscriber, kept
	// without mu (see GroupSubscriber.autoCommitted).
	commitErrors atomic.Uint64

	once   sync.Once
	closed chan struct{}
	// revoking, under mu, is set while a GroupSubscriber's revocation
	// commits (see GroupSubscriber.revoked), and closed once the
	// partitions it takes are dropped: Receive and Ack wait for it,
	// within their context, instead of for mu.
	revoking chan struct{}
	// rewinding, when set (by a test), is called by take once mu is
	// released, before it moves the client's marks back (see lose).
	rewinding func()
}

// queued is a fetched record and the log start offset its fetch
// response reported (-1 when the broker did not say).
type queued struct {
	r        *kgo.Record
	logStart int64
}

// partition is what a subscriber keeps for one partition of its topic.
type partition struct {
	// next is the offset expected next: one past the last record
	// delivered, or where the subscriber was asked to start; -1 when
	// the partition's first record decides.
	next    int64
	started bool
	// restart: a rebalance took the partition from this GroupSubscriber
	// since its last StreamStart; its next record, once it is back,
	// starts it again (see GroupSubscriber.disown).
	restart bool
	// owned: a GroupSubscriber has the partition assigned. epochs are
	// the leader epochs of delivered offsets not yet acknowledged.
	owned  bool
	epochs []epochMark
	// fetching: a GroupSubscriber was assigned the partition and the
	// client has returned no record of it since. The client knows of
	// the partition, and takes a mark of it, once its offset fetch is
	// done (a commit) or its first records are polled (none): until
	// then it drops a mark. remark (Offset 0: none) is the mark an Ack
	// made meanwhile, made again with the partition's first records
	// (take), and committed by a commit of its own every autocommit
	// interval and after those of a revocation and of Close (see
	// remarks).
	fetching bool
	remark   kgo.EpochOffset
	// rewinding: a data loss's rewind (see lose) has not yet moved the
	// client's mark back (take does, once mu is released, with
	// SetOffsets, which replaces any mark made before it). An Ack
	// meanwhile keeps its mark in remark, which take makes once the
	// client's mark is back (remarkRewound).
	rewinding bool
	// floor, of a GroupSubscriber, is the lowest offset an
	// acknowledgement commits, plus one: the group's commit when the
	// partition was assigned, then one past the last offset
	// acknowledged, or a data loss's reset point below it (see lose).
	// An acknowledgement below it commits nothing.
	floor int64
	// delivered is one past the last offset Receive has returned the
	// event of (see noteDelivered): an acknowledgement must be below
	// it, or in [lostFrom, lostTo). next runs ahead of it while a
	// record's events are pending.
	delivered int64
	// lostFrom and lostTo, when lostTo is above lostFrom, are offsets
	// Receive returned before a broker lost them (see lose).
	lostFrom, lostTo int64
	// assignedAt, of a GroupSubscriber, is the offset the partition's
	// current assignment started at (the group's commit the client
	// fetched for it), until a data loss is taken in it; -1 when
	// unknown. See staleLoss.
	assignedAt int64
}

// Stats counts what a subscriber skipped or could not read.
type Stats struct {
	// MalformedMarkers: records with a gap-marker header that could not
	// be read. Each was delivered as a message, headers and all.
	MalformedMarkers uint64
	// AlreadyDelivered: records skipped because this subscriber had
	// delivered their offsets already (a partition handed back to this
	// member by a rebalance resumes below what it delivered).
	AlreadyDelivered uint64
	// Disowned: records fetched from a partition a rebalance took from
	// this member before Receive returned them, dropped: the new owner
	// delivers them.
	Disowned uint64
	// Rejoins: group sessions lost to what a coordinator restart or a
	// session timeout causes (the member no longer known, a connection
	// refused), after which the client joins again by itself: logged,
	// not returned by Receive.
	Rejoins uint64
	// AcksNotOwned: acknowledgements of partitions a rebalance had
	// taken from this member, dropped: the new owner delivers again what
	// was not committed.
	AcksNotOwned uint64
	// CommitErrors: commits of a GroupSubscriber that failed — the
	// periodic ones, the one before a rebalance takes partitions away,
	// Close's — each logged. What a failed periodic commit carried goes
	// with the next commit; what one before a rebalance or at Close
	// carried is delivered again to the partitions' next owners.
	CommitErrors uint64
}

var _ transport.Subscriber = (*Subscriber)(nil)

// NewSubscriber connects a consumer without a group: of every partition
// of cfg.Topic, or of cfg.Partitions, from cfg.From. It refuses a cfg
// with a Group: use NewGroupSubscriber.
func NewSubscriber(ctx context.Context, cfg Config) (*Subscriber, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Group != "" {
		return nil, &ConfigError{"Group", cfg.Group, "a group member is made by NewGroupSubscriber"}
	}
	s := newSubscriber(cfg)
	opts := []kgo.Opt{kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeStartOffset(cfg.From.kgo())}
	if len(cfg.Partitions) > 0 {
		ps := map[int32]kgo.Offset{}
		for _, p := range cfg.Partitions {
			ps[p] = cfg.From.kgo()
		}
		opts = []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: ps})}
	}
	if cfg.From.kind == posOffset {
		// An offset out of the log resets to the same offset, which the
		// client bounds within the log: past the end starts at the end
		// (not at the start, the client's default), below the start at
		// the start (the records deleted then reported as a Gap).
		opts = append(opts, kgo.ConsumeResetOffset(cfg.From.kgo()))
	}
	if err := s.connect(ctx, cfg, opts); err != nil {
		return nil, err
	}
	return s, nil
}

func newSubscriber(cfg Config) *Subscriber {
	return &Subscriber{
		topic: cfg.Topic, sem: cfg.Semantics(), log: cfg.logger(), group: cfg.Group != "",
		parts: map[int32]*partition{}, start: cfg.From.exact(), earliest: cfg.From.kind == posEarliest,
		now: time.Now, closed: make(chan struct{}),
	}
}

// connect makes the client with the options every subscriber has, then
// opts, then cfg.Options.
func (s *Subscriber) connect(ctx context.Context, cfg Config, opts []kgo.Opt) error {
	base := []kgo.Opt{
		kgo.FetchMaxWait(100 * time.Millisecond),
		// Transaction markers hold offsets; seen, they are skipped as
		// what they are instead of leaving holes that look like loss.
		kgo.KeepControlRecords(),
	}
	cl, err := cfg.newClient(append(base, opts...)...)
	if err != nil {
		return fmt.Errorf("kafka transport: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("kafka transport: %w", err)
	}
	s.cl, s.admin = cl, cl
	return nil
}

// Semantics of the subscriber's configuration (see Config.Semantics).
func (s *Subscriber) Semantics() transport.Semantics { return s.sem }

// Stats returns the subscriber's counters.
func (s *Subscriber) Stats() Stats {
	s.mu.Lock()
	st := s.stats
	s.mu.Unlock()
	st.CommitErrors = s.commitErrors.Load()
	return st
}

// Receive returns the next event. A fetch error is returned when it
// arrives, and the records fetched with it by the calls that follow:
// the subscriber goes on (the client retries by itself). A broker that
// lost records this subscriber had delivered (logd with --fsync
// interval or never after a power loss, Kafka after an unclean leader
// election) is such an error, wrapping *kgo.ErrDataLoss, and the
// partition then goes on from where the client resumed, offsets
// delivered before included (what a GroupSubscriber's Ack of them
// commits: see GroupSubscriber.Ack). A group session lost to a coordinator
// restart is not an error: the member joins again (Stats.Rejoins).
func (s *Subscriber) Receive(ctx context.Context) (transport.Event, error) {
	for {
		select {
		case <-s.closed:
			return transport.Event{}, transport.ErrClosed
		default:
		}
		ev, ok, err := s.step(ctx)
		if err != nil || ok {
			return ev, err
		}
		if err := ctx.Err(); err != nil {
			return transport.Event{}, err
		}
		if err := s.poll(ctx); err != nil {
			return transport.Event{}, err
		}
	}
}

// step returns the next pending event, turning queued records into
// events as needed. ok is false when there is none. Learning the
// topic's cleanup policy (a request) happens here, without the lock.
func (s *Subscriber) step(ctx context.Context) (transport.Event, bool, error) {
	s.mu.Lock()
	if err := s.awaitRevocation(ctx); err != nil {
		s.mu.Unlock()
		return transport.Event{}, false, err
	}
	for len(s.pending) == 0 && len(s.queue) > 0 {
		q := s.queue[0]
		if s.holeAboveStart(q) && s.askPolicy() {
			s.mu.Unlock()
			if err := s.learnPolicy(ctx); err != nil {
				return transport.Event{}, false, err
			}
			s.mu.Lock()
			if err := s.awaitRevocation(ctx); err != nil {
				s.mu.Unlock()
				return transport.Event{}, false, err
			}
			continue // the queue may have changed meanwhile
		}
		s.queue = s.queue[1:]
		s.pendingPart, s.pendingOff, s.pendingNext = q.r.Partition, q.r.Offset, s.part(q.r.Partition).next
		s.emit(q)
	}
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return transport.Event{}, false, nil
	}
	ev := s.pending[0]
	s.pending = s.pending[1:]
	s.noteDelivered(ev)
	return ev, true, nil
}

// awaitRevocation waits until no revocation is committing (revoking),
// or ctx ends: its error then. Called with mu held, which it releases
// while it waits.
func (s *Subscriber) awaitRevocation(ctx context.Context) error {
	for s.revoking != nil {
		done := s.revoking
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	return nil
}

// noteDelivered moves the delivered offset of the pending record's
// partition past what ev, which Receive returns, delivers: the record
// itself with its last event, the offsets of a Gap of the partition
// (one before the record) with that Gap; a StreamStart delivers
// nothing. Called with mu held.
func (s *Subscriber) noteDelivered(ev transport.Event) {
	st := s.part(s.pendingPart)
	through := int64(-1)
	switch {
	case len(s.pending) == 0:
		through = s.pendingOff + 1
	case ev.Kind == transport.EventGap && ev.Gap.Stream == (transport.StreamID{Topic: s.topic, Partition: s.pendingPart}):
		through = int64(ev.Gap.To) + 1
	}
	st.delivered = max(st.delivered, through)
}

// poll fetches records into the queue. It returns the first fetch error
// other than the context's, after queueing every record fetched.
func (s *Subscriber) poll(ctx context.Context) error {
	fetches := s.cl.PollFetches(ctx)
	if s.group {
		// Records are queued below, where a revocation finds them: from
		// there on, a rebalance may go ahead.
		defer s.cl.AllowRebalance()
	}
	if fetches.IsClientClosed() {
		return transport.ErrClosed
	}
	return s.take(fetches)
}

// take queues the records of fetches and returns the first error other
// than a context's or a group session the client joins again.
func (s *Subscriber) take(fetches kgo.Fetches) error {
	var first error
	// rewind holds the commits a data loss moves back (see lose), set
	// once mu is released: the client takes its own locks.
	var rewind map[int32]kgo.EpochOffset
	s.rewindMu.Lock()
	defer s.rewindMu.Unlock()
	s.mu.Lock()
	// Errors first: a loss drops what was queued before this poll of
	// the offsets it lost (see dropLost), not the records of this poll,
	// which the client fetched from the reset point on (it returns a
	// loss after the fetches polled with it).
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		err := fp.Err
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if rejoining(err) {
			s.stats.Rejoins++
			s.log.Warn("kafka transport: group session lost; joining again", "err", err)
			return
		}
		var loss *kgo.ErrDataLoss
		if errors.As(err, &loss) && loss.Topic == s.topic && !s.staleLoss(loss) {
			// The broker lost what was delivered from ResetTo on: what
			// it holds there now is new, not delivered (see lose).
			s.dropLost(loss.Partition, loss.ResetTo)
			if s.part(loss.Partition).lose(loss.ResetTo) {
				if rewind == nil {
					rewind = map[int32]kgo.EpochOffset{}
				}
				rewind[loss.Partition] = kgo.EpochOffset{Epoch: -1, Offset: loss.ResetTo}
			}
		}
		if first == nil {
			first = fmt.Errorf("kafka transport: fetch %s/%d: %w", fp.Topic, fp.Partition, err)
		}
	})
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		for _, r := range fp.Records {
			s.queue = append(s.queue, queued{r, fp.LogStartOffset})
		}
		if st := s.parts[fp.Partition]; fp.Topic == s.topic && len(fp.Records) > 0 && st != nil && st.fetching {
			// The client took the partition's commit, or started it
			// with these records: it takes marks now.
			st.fetching = false
			s.remark(fp.Partition, st)
		}
	})
	s.mu.Unlock()
	if len(rewind) > 0 {
		if s.rewinding != nil {
			s.rewinding()
		}
		// SetOffsets, unlike a mark, moves the client's mark back,
		// whatever its leader epoch. Called before the poll allows a
		// rebalance (kgo.BlockRebalanceOnPoll): no revocation runs
		// meanwhile. Close's commit, the last, waits for it and for
		// the commit of the reset points (rewindMu, awaitRewind).
		s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.topic: rewind})
		s.remarkRewound(rewind)
		s.commitRewind(rewind)
	}
	return first
}

// expected is the offset expected of q's record, in partition st: the
// next after the last one delivered, or where the subscriber was asked
// to start; for a subscriber that starts at the earliest record, the
// log start the fetch reported. -1 when unknown: the record starts the
// stream. Called with mu held.
func (s *Subscriber) expected(st *partition, q queued) int64 {
	if st.next < 0 && !st.started && s.earliest {
		return q.logStart
	}
	return st.next
}

// rejoining reports whether err is a group session lost to a cause the
// client recovers from by joining again: the coordinator restarted or
// moved, forgot the member, or cannot be reached for now.
func rejoining(err error) bool {
	var gs *kgo.ErrGroupSession
	if !errors.As(err, &gs) {
		return false
	}
	var ne net.Error
	switch {
	case kerr.IsRetriable(gs.Err), errors.As(gs.Err, &ne), errors.Is(gs.Err, io.EOF), errors.Is(gs.Err, io.ErrUnexpectedEOF),
		errors.Is(gs.Err, syscall.ECONNREFUSED), errors.Is(gs.Err, syscall.ECONNRESET):
		return true
	}
	for _, e := range []error{kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.RebalanceInProgress} {
		if errors.Is(gs.Err, e) {
			return true
		}
	}
	return false
}

// part returns the state of partition p, making it on first sight.
// Called with mu held.
func (s *Subscriber) part(p int32) *partition {
	st := s.parts[p]
	if st == nil {
		st = &partition{next: s.start, assignedAt: -1}
		s.parts[p] = st
	}
	return st
}

// emit turns a queued record into pending events: a StreamStart on the
// partition's first record (and on its first once a rebalance gave it
// back), a Gap for offsets skipped since the last
// one, then the record — as a message, or as the Gap a gap marker
// stands for; a transaction marker only moves the position. Called with
// mu held.
func (s *Subscriber) emit(q queued) {
	r := q.r
	st := s.part(r.Partition)
	if s.group && !st.owned {
		s.stats.Disowned++ // revoked after it was fetched; its new owner delivers it
		return
	}
	if st.started && r.Offset < st.next {
		s.stats.AlreadyDelivered++
		return
	}
	id := transport.StreamID{Topic: r.Topic, Partition: r.Partition}
	next := s.expected(st, q)
	if !st.started || st.restart {
		st.started, st.restart = true, false
		if next > r.Offset {
			s.warnBelowStart(id, next, r.Offset)
		}
		first := r.Offset
		if next >= 0 && next < first {
			first = next // the stream starts with a gap
		}
		s.pending = append(s.pending, transport.Event{Kind: transport.EventStreamStart,
			Start: transport.StreamStart{Stream: id, FirstSeq: uint64(first)}})
	}
	if next >= 0 && r.Offset > next {
		for _, g := range s.skipped(id, next, r.Offset-1, q.logStart) {
			s.pending = append(s.pending, transport.Event{Kind: transport.EventGap, Gap: g})
		}
	}
	st.next = r.Offset + 1
	if s.group {
		st.noteEpoch(r.Offset, r.LeaderEpoch)
	}
	if r.Attrs.IsControl() {
		if len(s.pending) == 0 { // no event to deliver it with
			st.delivered = max(st.delivered, st.next)
		}
		return
	}
	m := transport.Message{
		Stream: id, Seq: uint64(r.Offset), Time: r.Timestamp, Topic: r.Topic, Key: r.Key, Payload: r.Value,
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, transport.Header{Key: h.Key, Value: h.Value})
	}
	mark, ok, err := transport.ParseMarker(m)
	switch {
	case ok: // a Gap, or a StreamEnd, of the origin stream
		s.pending = append(s.pending, mark)
		return
	case err != nil:
		s.stats.MalformedMarkers++
		s.warnMalformed(id, r.Offset, err)
	}
	s.pending = append(s.pending, transport.Event{Kind: transport.EventMessage, Message: m})
}

// warnBelowStart logs a partition whose first record is below the
// offset it was to start at (From, or its group's commit): that offset
// was past the partition's end — a log recreated since, or an offset of
// another log — and the partition starts where the client put it
// instead: at its end (From), or at the reset offset, the log start (a
// commit, as Kafka's auto.offset.reset=earliest).
func (s *Subscriber) warnBelowStart(id transport.StreamID, asked, first int64) {
	s.log.Warn("kafka transport: the offset to start at is past the partition's end: the partition starts below it",
		"stream", id, "asked", asked, "first", first)
}

// warnMalformed logs the 1st, 2nd, 4th, 8th… malformed marker: a stream
// written with a layout this reader does not know would otherwise log a
// line per record. Stats.MalformedMarkers counts them all.
func (s *Subscriber) warnMalformed(id transport.StreamID, offset int64, err error) {
	n := s.stats.MalformedMarkers
	if n&(n-1) != 0 {
		return
	}
	s.log.Warn("kafka transport: malformed gap marker delivered as a message (logged at the 1st, 2nd, 4th, 8th… one)",
		"stream", id, "offset", offset, "count", n, "err", err)
}

// Close releases the client. A Receive blocked in it returns ErrClosed.
func (s *Subscriber) Close() error {
	s.once.Do(func() {
		close(s.closed)
		s.cl.Close()
	})
	return nil
}
