package transporttest_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// The fake transport: publishers send frames over a bounded channel to
// one subscriber. It injects faults at the publisher when asked. Claiming
// Retransmit, the publisher sends every lost frame again later (itself
// subject to the faults), and the subscriber buffers what comes early
// until the hole before it is repaired. Otherwise, like an at-most-once
// transport, the subscriber reports every hole in the sequence as a gap.
// Either way it drops what comes late or twice. Sequence numbers start
// at 1.

// fakeFeed is the feed every fake publisher publishes on.
const fakeFeed = 7

// fakeBug breaks the fake on purpose, to show the suite catches it.
type fakeBug string

const (
	bugSilentLoss fakeBug = "silent-loss" // the subscriber skips seq 100 without a gap
	bugDuplicate  fakeBug = "duplicate"   // the subscriber delivers seq 50 twice
	bugNoReplaces fakeBug = "no-replaces" // a restarted stream's start does not name the old one
	bugIgnoreCtx  fakeBug = "ignore-ctx"  // Receive ignores its context
	bugLeak       fakeBug = "leak"        // a publisher leaves a goroutine running
)

// fakeOptions configures a fake transport.
type fakeOptions struct {
	sem transport.Semantics
	// faults: NewPair injects faults; otherwise it refuses them.
	faults bool
	bug    fakeBug
}

// harness returns the Harness of the fake.
func (o fakeOptions) harness() transporttest.Harness {
	return transporttest.Harness{
		NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
			if !f.IsZero() && !o.faults {
				return transporttest.Pair{}, fmt.Errorf("fake: %w", transporttest.ErrFaultsUnsupported)
			}
			n := &fakeNet{opts: o, faults: f, frames: make(chan frame, 256), done: make(chan struct{})}
			sub := &fakeSub{net: n, gone: map[transport.StreamID]bool{}}
			newPub := func() (transport.Publisher, error) { return n.newPub(), nil }
			return transporttest.Pair{Pub: n.newPub(), Sub: sub, NewPublisher: newPub}, nil
		},
		ContiguousSeq: true,
		Messages:      2000,
	}
}

// fakeNet is one address: what its publishers send, its subscriber
// receives.
type fakeNet struct {
	opts   fakeOptions
	faults transporttest.Faults
	frames chan frame
	// done is closed when the subscriber closes.
	done chan struct{}

	mu      sync.Mutex
	started int
}

type frameKind uint8

const (
	frameData frameKind = iota + 1
	frameHeartbeat
	frameEnd
)

// frame is what a fake publisher sends: a message, a heartbeat carrying
// the next sequence number, or the end of the stream with its last.
type frame struct {
	kind   frameKind
	stream transport.StreamID
	msg    transport.Message
	seq    uint64
}

func (n *fakeNet) newPub() *fakePub {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := transport.StreamID{Feed: fakeFeed, Session: rand.Uint64() | 1}
	p := &fakePub{net: n, id: id, seq: 1, closed: make(chan struct{})}
	if !n.faults.IsZero() {
		p.rng = rand.New(rand.NewPCG(uint64(n.faults.Seed), uint64(n.started)))
	}
	n.started++
	if n.opts.bug == bugLeak {
		go func() { <-p.leak }()
	}
	return p
}

// fakePub is a fake publisher.
type fakePub struct {
	net    *fakeNet
	id     transport.StreamID
	closed chan struct{}
	once   sync.Once
	leak   chan struct{} // never closed (bugLeak)

	mu     sync.Mutex
	seq    uint64     // next sequence number
	rng    *rand.Rand // nil on a clean network
	held   *frame     // a frame reordered behind the next one
	repair []frame    // lost frames to send again (Retransmit)
}

func (p *fakePub) Semantics() transport.Semantics { return p.net.opts.sem }

func (p *fakePub) Publish(ctx context.Context, m transport.Message) error {
	if len(m.Payload) > transporttest.DefaultMaxPayload {
		return transport.ErrTooLarge
	}
	m = transport.Message{
		Stream: p.id, Time: m.Time, Topic: m.Topic, Key: slices.Clone(m.Key),
		Headers: slices.Clone(m.Headers), Payload: slices.Clone(m.Payload),
	}
	for i := range m.Headers {
		m.Headers[i].Value = slices.Clone(m.Headers[i].Value)
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isClosed() {
		return transport.ErrClosed
	}
	m.Seq = p.seq
	if err := p.emit(ctx, frame{kind: frameData, stream: p.id, msg: m, seq: p.seq}); err != nil {
		return err
	}
	p.seq++
	return nil
}

// emit sends a data frame through the faults. It fails only if the frame
// could not be sent; what happens to copies and held frames is the
// network's business.
func (p *fakePub) emit(ctx context.Context, f frame) error {
	if p.rng == nil {
		return p.send(ctx, f)
	}
	repairs := p.repair
	p.repair = nil
	for _, r := range repairs {
		p.fault(r)
	}
	fl := p.net.faults
	lost, dup, reorder := p.rng.Float64() < fl.Loss, p.rng.Float64() < fl.Duplicate, p.rng.Float64() < fl.Reorder
	switch {
	case lost:
		p.lose(f)
		return nil
	case reorder && p.held == nil:
		p.held = &f
		return nil
	}
	if err := p.send(ctx, f); err != nil {
		return err
	}
	if dup {
		p.trySend(f)
	}
	p.release()
	return nil
}

// fault sends a repair through the faults, without blocking.
func (p *fakePub) fault(f frame) {
	if p.rng.Float64() < p.net.faults.Loss || !p.trySend(f) {
		p.lose(f)
	}
}

// lose drops f; a Retransmit fake sends it again later.
func (p *fakePub) lose(f frame) {
	if p.net.opts.sem.Has(transport.Retransmit) {
		p.repair = append(p.repair, f)
	}
}

// release sends the held frame, if any, unless the channel is full: then
// it is lost.
func (p *fakePub) release() {
	if p.held != nil && !p.trySend(*p.held) {
		p.lose(*p.held)
	}
	p.held = nil
}

// flushRepairs sends every repair, waiting for room.
func (p *fakePub) flushRepairs(ctx context.Context) error {
	for len(p.repair) > 0 {
		if err := p.send(ctx, p.repair[0]); err != nil {
			return err
		}
		p.repair = p.repair[1:]
	}
	return nil
}

func (p *fakePub) send(ctx context.Context, f frame) error {
	select {
	case p.net.frames <- f:
		return nil
	case <-p.net.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closed:
		return transport.ErrClosed
	}
}

// trySend sends f if there is room and reports whether it did.
func (p *fakePub) trySend(f frame) bool {
	select {
	case p.net.frames <- f:
		return true
	case <-p.net.done:
		return true
	default:
		return false
	}
}

// Flush sends the held frame and a heartbeat with the next sequence
// number, so the subscriber sees a lost tail.
func (p *fakePub) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isClosed() {
		return transport.ErrClosed
	}
	p.release()
	if err := p.flushRepairs(ctx); err != nil {
		return err
	}
	return p.send(ctx, frame{kind: frameHeartbeat, stream: p.id, seq: p.seq})
}

func (p *fakePub) Close() error {
	err := transport.ErrClosed
	p.once.Do(func() {
		close(p.closed)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.release()
		p.trySend(frame{kind: frameEnd, stream: p.id, seq: p.seq - 1})
		err = nil
	})
	return err
}

func (p *fakePub) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// fakeSub is a fake subscriber. Only Close touches it from another
// goroutine, and Close only closes net.done.
type fakeSub struct {
	net     *fakeNet
	once    sync.Once
	pending []transport.Event
	cur     transport.StreamID // the stream being delivered, zero after it ended
	prev    transport.StreamID // the stream before cur
	next    uint64             // next sequence number of cur
	early   map[uint64]frame   // frames of cur after a hole (Retransmit)
	gone    map[transport.StreamID]bool
}

func (s *fakeSub) Semantics() transport.Semantics { return s.net.opts.sem }

func (s *fakeSub) Receive(ctx context.Context) (transport.Event, error) {
	done := ctx.Done()
	if s.net.opts.bug == bugIgnoreCtx {
		done = nil
	}
	for {
		select {
		case <-s.net.done:
			return transport.Event{}, transport.ErrClosed
		default:
		}
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			return ev, nil
		}
		select {
		case f := <-s.net.frames:
			s.handle(f)
		case <-done:
			return transport.Event{}, ctx.Err()
		case <-s.net.done:
			return transport.Event{}, transport.ErrClosed
		}
	}
}

func (s *fakeSub) Close() error {
	err := transport.ErrClosed
	s.once.Do(func() {
		close(s.net.done)
		err = nil
	})
	return err
}

// handle turns a frame into events.
func (s *fakeSub) handle(f frame) {
	if s.gone[f.stream] {
		return
	}
	if f.stream != s.cur {
		s.begin(f.stream)
	}
	retransmit := s.net.opts.sem.Has(transport.Retransmit)
	switch f.kind {
	case frameData:
		switch {
		case f.seq < s.next:
		case s.net.opts.bug == bugSilentLoss && f.seq == 100:
			s.next = 101
		case retransmit && f.seq > s.next:
			s.early[f.seq] = f
		default:
			s.skipTo(f.seq, transport.GapNoRecovery)
			s.deliver(f)
		}
	case frameHeartbeat:
		if !retransmit {
			s.skipTo(f.seq, transport.GapNoRecovery)
		}
	case frameEnd:
		s.finish(f.seq+1, transport.EndClosed)
	}
}

// deliver delivers f, the next frame, and the early ones it lets through.
func (s *fakeSub) deliver(f frame) {
	for ok := true; ok; f, ok = s.early[s.next] {
		delete(s.early, f.seq)
		s.emit(transport.Event{Kind: transport.EventMessage, Message: f.msg})
		if s.net.opts.bug == bugDuplicate && f.seq == 50 {
			s.emit(transport.Event{Kind: transport.EventMessage, Message: f.msg})
		}
		s.next = f.seq + 1
	}
}

// begin starts stream id, ending the current one.
func (s *fakeSub) begin(id transport.StreamID) {
	if !s.cur.IsZero() {
		s.finish(s.next, transport.EndReplaced)
	}
	s.cur, s.next, s.early = id, 1, map[uint64]frame{}
	replaces := s.prev
	if s.net.opts.bug == bugNoReplaces {
		replaces = transport.StreamID{}
	}
	s.emit(transport.Event{Kind: transport.EventStreamStart,
		Start: transport.StreamStart{Stream: id, Replaces: replaces, FirstSeq: 1}})
}

// finish ends the current stream before seq end, giving up on what is
// still missing.
func (s *fakeSub) finish(end uint64, why transport.EndReason) {
	for _, seq := range slices.Sorted(maps.Keys(s.early)) {
		s.skipTo(seq, transport.GapStreamEnded)
		s.deliver(s.early[seq])
	}
	s.skipTo(end, transport.GapStreamEnded)
	s.emit(transport.Event{Kind: transport.EventStreamEnd,
		End: transport.StreamEnd{Stream: s.cur, LastSeq: end - 1, Reason: why}})
	s.gone[s.cur] = true
	s.prev, s.cur = s.cur, transport.StreamID{}
}

// skipTo reports the sequence numbers below seq not yet seen as lost.
func (s *fakeSub) skipTo(seq uint64, why transport.GapReason) {
	if seq > s.next {
		s.emit(transport.Event{Kind: transport.EventGap,
			Gap: transport.Gap{Stream: s.cur, From: s.next, To: seq - 1, Reason: why}})
		s.next = seq
	}
}

func (s *fakeSub) emit(ev transport.Event) { s.pending = append(s.pending, ev) }
