package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// ackSub is a subscriber that can be acknowledged: it delivers its
// events, then waits for its context; each Ack is checked against what
// the sink had written out.
type ackSub struct {
	events  []transport.Event
	written func() uint64 // the last seq the sink wrote out

	mu    sync.Mutex
	acked uint64
	errs  []error
	got   chan uint64
}

func (s *ackSub) Receive(ctx context.Context) (transport.Event, error) {
	if len(s.events) > 0 {
		ev := s.events[0]
		s.events = s.events[1:]
		return ev, nil
	}
	<-ctx.Done()
	return transport.Event{}, ctx.Err()
}

func (s *ackSub) Ack(_ context.Context, stream transport.StreamID, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stream.Topic != "t" {
		s.errs = append(s.errs, fmt.Errorf("ack of %s, not a stream of this subscriber", stream))
	}
	if w := s.written(); seq > w {
		s.errs = append(s.errs, fmt.Errorf("ack %d while only %d was written out", seq, w))
	}
	s.acked = seq
	s.got <- seq
	return nil
}

func (s *ackSub) Semantics() transport.Semantics { return transport.AtLeastOnce }
func (s *ackSub) Close() error                   { return nil }

// recordSink shows messages, and writes them out on flush, which fails
// once failAt messages are shown.
type recordSink struct {
	mu           sync.Mutex
	shown, wrote uint64
	failAt       uint64
}

func (s *recordSink) message(m *transport.Message, _ time.Time) error {
	s.mu.Lock()
	s.shown = m.Seq
	s.mu.Unlock()
	return nil
}
func (s *recordSink) gap(*transport.Gap) {}
func (s *recordSink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAt > 0 && s.shown >= s.failAt {
		return errors.New("stdout closed")
	}
	s.wrote = s.shown
	return nil
}
func (s *recordSink) close() error { return s.flush() }
func (s *recordSink) written() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wrote
}

func logEvents(n uint64) []transport.Event {
	part := transport.StreamID{Topic: "t"}
	evs := []transport.Event{{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: part, FirstSeq: 1}}}
	for s := uint64(1); s <= n; s++ {
		evs = append(evs, transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: part, Seq: s}})
	}
	// A gap marker read back: the gap of the stream it stands for, which
	// is not this subscriber's to acknowledge.
	return append(evs, transport.Event{Kind: transport.EventGap, Gap: transport.Gap{Stream: transport.StreamID{Feed: 1, Session: 9}, From: 1, To: 5, Reason: transport.GapSourceDown}})
}

// TestReceiverAcknowledgesWhatWasWritten: sub acknowledges a message only
// once it was written out, and does so when nothing more arrives too;
// a gap of a stream it did not start is not acknowledged.
func TestReceiverAcknowledgesWhatWasWritten(t *testing.T) {
	out := &recordSink{}
	sub := &ackSub{events: logEvents(5), written: out.written, got: make(chan uint64, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	r := &receiver{sub: sub, acker: sub, out: out, events: io.Discard}
	done := make(chan error, 1)
	go func() { _, err := r.run(ctx); done <- err }()
	select {
	case seq := <-sub.got:
		if seq != 5 {
			t.Errorf("acknowledged %d, want 5", seq)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing acknowledged while the subscriber waited")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(sub.errs) > 0 {
		t.Error(sub.errs)
	}
}

// TestReceiverDoesNotAcknowledgeUnwritten: when writing out fails, what
// was not written is not acknowledged.
func TestReceiverDoesNotAcknowledgeUnwritten(t *testing.T) {
	out := &recordSink{failAt: 3}
	sub := &ackSub{events: logEvents(5), written: out.written, got: make(chan uint64, 16)}
	r := &receiver{sub: sub, acker: sub, out: out, events: io.Discard, limit: 5}
	if _, err := r.run(context.Background()); err == nil {
		t.Fatal("no error from a failed write")
	}
	if len(sub.errs) > 0 || sub.acked > 2 {
		t.Errorf("acknowledged %d; %v", sub.acked, sub.errs)
	}
}

// TestReceiverForgetsEndedSessions: `sub` of a feed whose sessions come
// and go keeps nothing of the ended ones.
func TestReceiverForgetsEndedSessions(t *testing.T) {
	var evs []transport.Event
	for i := range uint64(10_000) {
		s := transport.StreamID{Feed: 1, Session: i + 1}
		evs = append(evs,
			transport.Event{Kind: transport.EventStreamStart, Start: transport.StreamStart{Stream: s, FirstSeq: 1}},
			transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: s, Seq: 1}},
			transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: s, LastSeq: 1, Reason: transport.EndReplaced}})
	}
	out := &recordSink{}
	sub := &ackSub{events: evs, written: out.written, got: make(chan uint64, 16)}
	r := &receiver{sub: sub, out: out, events: io.Discard, limit: 10_000}
	n, err := r.run(context.Background())
	if err != nil || n != 10_000 {
		t.Fatalf("received %d, %v", n, err)
	}
	if len(r.own) > 1 { // the last session's end comes after the limit
		t.Errorf("%d streams kept after 10,000 ended sessions", len(r.own))
	}
}
