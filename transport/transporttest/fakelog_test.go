package transporttest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// The fake log: one partition in memory, standing for a log daemon and
// its disk. Publishers append to it, and Flush makes what they appended
// durable; RestartServer crashes it, keeping only what is durable.
// Subscribers read it from a position (Seq is the offset, from 0),
// waiting for appends, and acknowledge (they claim AtLeastOnce). Pair.Sub
// and the subscribers NewGroupMember opens are members of one consumer
// group: their Close commits the position after what they acknowledged,
// and the next member starts there.

// logSemantics is what the fake log claims unless a test says otherwise.
const logSemantics = transport.Ordered | transport.GapReports | transport.Deduplicated |
	transport.Durable | transport.Replay | transport.AtLeastOnce

// Bugs of the fake log.
const (
	bugLoseOnRestart   fakeBug = "lose-on-restart"   // Flush does not make appends durable, so a restart loses them
	bugNoRestartServer fakeBug = "no-restart-server" // the harness has no RestartServer
	bugLogNewStream    fakeBug = "log-new-stream"    // a restarted publisher appends as partition 1
	bugReplaySkips     fakeBug = "replay-skips"      // NewSubscriber(from) starts after from
	bugReplayRenumbers fakeBug = "replay-renumbers"  // NewSubscriber(from) numbers its messages from 0
	bugNoNewSubscriber fakeBug = "no-new-subscriber" // the harness has no NewSubscriber
	bugCommitReceived  fakeBug = "commit-received"   // Close commits what Receive handed out, not what was acknowledged
	bugForgetAcks      fakeBug = "forget-acks"       // Close commits nothing
	bugAckRegress      fakeBug = "ack-regress"       // an Ack below the last one moves the position back
	bugNoGroupMember   fakeBug = "no-group-member"   // the harness has no NewGroupMember
	bugAckMissing      fakeBug = "ack-missing"       // subscribers claim AtLeastOnce without implementing Acknowledger
	bugAckUnclaimed    fakeBug = "ack-unclaimed"     // subscribers implement Acknowledger without claiming AtLeastOnce
)

// brokenLog returns the fake log with bug, if bug is one of its bugs.
func brokenLog(bug fakeBug) (fakeLogOptions, bool) {
	switch bug {
	case bugLoseOnRestart, bugNoRestartServer, bugLogNewStream, bugReplaySkips, bugReplayRenumbers, bugNoNewSubscriber,
		bugCommitReceived, bugForgetAcks, bugAckRegress, bugNoGroupMember, bugAckMissing:
		return fakeLogOptions{sem: logSemantics, bug: bug}, true
	case bugAckUnclaimed:
		return fakeLogOptions{sem: logSemantics &^ transport.AtLeastOnce, bug: bug}, true
	}
	return fakeLogOptions{}, false
}

// fakeLogOptions configures a fake log.
type fakeLogOptions struct {
	sem transport.Semantics
	bug fakeBug
}

// logStream is the fake log's partition.
var logStream = transport.StreamID{Topic: transporttest.Topic}

// harness returns the Harness of the fake log.
func (o fakeLogOptions) harness() transporttest.Harness {
	return transporttest.Harness{
		NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
			if !f.IsZero() {
				return transporttest.Pair{}, fmt.Errorf("fake log: %w", transporttest.ErrFaultsUnsupported)
			}
			l := &fakeLog{opts: o, changed: make(chan struct{})}
			p := transporttest.Pair{
				Pub:           l.newPub(),
				Sub:           l.member(0),
				NewPublisher:  func() (transport.Publisher, error) { return l.newPub(), nil },
				RestartServer: l.restart,
				NewSubscriber: func(from uint64) (transport.Subscriber, error) { return l.replay(from), nil },
				NewGroupMember: func() (transport.Subscriber, error) {
					return l.member(l.committedOffset()), nil
				},
			}
			switch o.bug {
			case bugNoRestartServer:
				p.RestartServer = nil
			case bugNoNewSubscriber:
				p.NewSubscriber = nil
			case bugNoGroupMember:
				p.NewGroupMember = nil
			}
			return p, nil
		},
		ContiguousSeq:  true,
		Messages:       2000,
		TimeResolution: time.Millisecond,
	}
}

// fakeLog is the log and its disk.
type fakeLog struct {
	opts fakeLogOptions

	mu      sync.Mutex
	records []transport.Message
	durable int // records[:durable] survive a restart
	pubs    int // publishers started
	// committed is the group's committed offset: where its next member
	// starts. Commits survive a restart, as Kafka's do.
	committed uint64
	// changed is closed, and replaced, whenever records change.
	changed chan struct{}
}

// append adds m to the log at the next offset.
func (l *fakeLog) append(m transport.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m.Seq = uint64(len(l.records))
	l.records = append(l.records, m)
	l.notify()
}

// sync makes every record appended so far durable.
func (l *fakeLog) sync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.bug != bugLoseOnRestart {
		l.durable = len(l.records)
	}
}

// restart crashes the log and starts it again: what was not durable is
// gone.
func (l *fakeLog) restart() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = l.records[:l.durable]
	l.notify()
	return nil
}

// read returns the record at offset off, or, if there is none yet, a
// channel closed when the log changes.
func (l *fakeLog) read(off uint64) (transport.Message, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off < uint64(len(l.records)) {
		return l.records[off], true, nil
	}
	return transport.Message{}, false, l.changed
}

// commit sets the group's committed offset.
func (l *fakeLog) commit(off uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.committed = off
}

func (l *fakeLog) committedOffset() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.committed
}

func (l *fakeLog) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *fakeLog) newPub() *fakeLogPub {
	l.mu.Lock()
	defer l.mu.Unlock()
	stream := logStream
	if l.opts.bug == bugLogNewStream && l.pubs > 0 {
		stream.Partition = 1
	}
	l.pubs++
	return &fakeLogPub{log: l, stream: stream, closed: make(chan struct{})}
}

// fakeLogPub appends to the fake log.
type fakeLogPub struct {
	log    *fakeLog
	stream transport.StreamID
	once   sync.Once
	closed chan struct{}
}

func (p *fakeLogPub) Semantics() transport.Semantics { return p.log.opts.sem }

func (p *fakeLogPub) Publish(ctx context.Context, m transport.Message) error {
	switch {
	case isDone(p.closed):
		return transport.ErrClosed
	case len(m.Payload) > transporttest.DefaultMaxPayload:
		return transport.ErrTooLarge
	}
	m = transport.Message{
		Stream: p.stream, Time: m.Time.Truncate(time.Millisecond), Topic: m.Topic, Key: slices.Clone(m.Key),
		Headers: slices.Clone(m.Headers), Payload: slices.Clone(m.Payload),
	}
	for i := range m.Headers {
		m.Headers[i].Value = slices.Clone(m.Headers[i].Value)
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	p.log.append(m)
	return nil
}

func (p *fakeLogPub) Flush(ctx context.Context) error {
	if isDone(p.closed) {
		return transport.ErrClosed
	}
	p.log.sync()
	return nil
}

func (p *fakeLogPub) Close() error {
	err := transport.ErrClosed
	p.once.Do(func() {
		p.log.sync()
		close(p.closed)
		err = nil
	})
	return err
}

// member opens a member of the group reading the log from offset from.
func (l *fakeLog) member(from uint64) transport.Subscriber {
	return l.acknowledging(&fakeLogSub{log: l, group: true, next: from, done: make(chan struct{})})
}

// replay opens a subscriber reading the log from offset from, as
// NewSubscriber does.
func (l *fakeLog) replay(from uint64) transport.Subscriber {
	s := &fakeLogSub{log: l, next: from, done: make(chan struct{})}
	switch l.opts.bug {
	case bugReplaySkips:
		s.next++
	case bugReplayRenumbers:
		s.shift = from
	}
	return l.acknowledging(s)
}

// acknowledging returns s as an Acknowledger when the fake claims
// AtLeastOnce (or, broken, when it does not).
func (l *fakeLog) acknowledging(s *fakeLogSub) transport.Subscriber {
	claims := l.opts.sem.Has(transport.AtLeastOnce)
	if (claims && l.opts.bug != bugAckMissing) || l.opts.bug == bugAckUnclaimed {
		return fakeLogAckSub{s}
	}
	return s
}

// fakeLogSub reads the fake log.
type fakeLogSub struct {
	log   *fakeLog
	group bool // a member of the group: Close commits
	once  sync.Once
	done  chan struct{}
	shift uint64 // subtracted from every offset delivered (bugReplayRenumbers)

	mu    sync.Mutex
	next  uint64 // the next offset to deliver
	acked uint64 // the offset after the last acknowledged; 0: none
}

func (s *fakeLogSub) Semantics() transport.Semantics { return s.log.opts.sem }

func (s *fakeLogSub) Receive(ctx context.Context) (transport.Event, error) {
	for {
		if isDone(s.done) {
			return transport.Event{}, transport.ErrClosed
		}
		s.mu.Lock()
		m, ok, changed := s.log.read(s.next)
		if ok {
			s.next++
		}
		s.mu.Unlock()
		if ok {
			m.Seq -= s.shift
			return transport.Event{Kind: transport.EventMessage, Message: m}, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return transport.Event{}, ctx.Err()
		case <-s.done:
			return transport.Event{}, transport.ErrClosed
		}
	}
}

// Close commits, for a member of the group, the offset after the last
// one acknowledged.
func (s *fakeLogSub) Close() error {
	err := transport.ErrClosed
	s.once.Do(func() {
		close(s.done)
		err = nil
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case !s.group, s.log.opts.bug == bugForgetAcks:
		case s.log.opts.bug == bugCommitReceived:
			s.log.commit(s.next)
		case s.acked > 0:
			s.log.commit(s.acked)
		}
	})
	return err
}

// fakeLogAckSub is a fakeLogSub that acknowledges.
type fakeLogAckSub struct{ *fakeLogSub }

// Ack records that the messages up to seq were processed; Close commits.
func (s fakeLogAckSub) Ack(ctx context.Context, stream transport.StreamID, seq uint64) error {
	if stream != logStream {
		return fmt.Errorf("fake log: Ack of stream %s, not %s", stream, logStream)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq+1 > s.acked || s.log.opts.bug == bugAckRegress {
		s.acked = seq + 1
	}
	return nil
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
