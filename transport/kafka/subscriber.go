package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// closeFlush bounds how long Close waits for buffered records or
// offset commits.
const closeFlush = 5 * time.Second

// Subscriber consumes a topic: directly from an offset or time, or as a
// member of a consumer group that commits what Receive has returned.
type Subscriber struct {
	cl    *kgo.Client
	group bool

	// Owned by the goroutine calling Receive.
	queue   []*kgo.Record
	pending []transport.Event
	next    map[int32]int64 // per partition: the offset expected next
	started map[int32]bool

	once   sync.Once
	closed chan struct{}
}

var _ transport.Subscriber = (*Subscriber)(nil)

// NewSubscriber connects a consumer.
func NewSubscriber(ctx context.Context, cfg Config) (*Subscriber, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.FetchMaxWait(100 * time.Millisecond)}
	switch {
	case cfg.Group != "":
		opts = append(opts, kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeResetOffset(cfg.From),
			kgo.AutoCommitMarks()) // commit only what Receive returned
	case cfg.Partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {cfg.Partition: cfg.From}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(cfg.Topic), kgo.ConsumeResetOffset(cfg.From))
	}
	cl, err := kgo.NewClient(append(opts, cfg.Options...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	return &Subscriber{
		cl: cl, group: cfg.Group != "",
		next: map[int32]int64{}, started: map[int32]bool{}, closed: make(chan struct{}),
	}, nil
}

// Semantics of the transport.
func (s *Subscriber) Semantics() transport.Semantics { return semantics }

// Receive returns the next event: a record as a message, a StreamStart
// before a partition's first record, or a Gap where offsets were skipped.
func (s *Subscriber) Receive(ctx context.Context) (transport.Event, error) {
	for {
		select {
		case <-s.closed:
			return transport.Event{}, transport.ErrClosed
		default:
		}
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			return ev, nil
		}
		if len(s.queue) > 0 {
			r := s.queue[0]
			s.queue = s.queue[1:]
			s.emit(r)
			continue
		}
		if err := ctx.Err(); err != nil {
			return transport.Event{}, err
		}
		fetches := s.cl.PollFetches(ctx)
		if fetches.IsClientClosed() {
			return transport.Event{}, transport.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return transport.Event{}, err
		}
		for _, fe := range fetches.Errors() {
			if fe.Err != context.Canceled && fe.Err != context.DeadlineExceeded {
				return transport.Event{}, fmt.Errorf("kafka transport: fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { s.queue = append(s.queue, r) })
	}
}

// emit turns a record into pending events: StreamStart on first sight of
// its partition, a Gap for offsets skipped since the last record, then
// the message.
func (s *Subscriber) emit(r *kgo.Record) {
	id := transport.StreamID{Topic: r.Topic, Partition: r.Partition}
	if !s.started[r.Partition] {
		s.started[r.Partition] = true
		s.pending = append(s.pending, transport.Event{Kind: transport.EventStreamStart,
			Start: transport.StreamStart{Stream: id, FirstSeq: uint64(r.Offset)}})
	} else if want := s.next[r.Partition]; r.Offset > want {
		s.pending = append(s.pending, transport.Event{Kind: transport.EventGap,
			Gap: transport.Gap{Stream: id, From: uint64(want), To: uint64(r.Offset - 1), Reason: transport.GapUnrecoverable}})
	}
	s.next[r.Partition] = r.Offset + 1
	m := transport.Message{
		Stream: id, Seq: uint64(r.Offset), Time: r.Timestamp, Topic: r.Topic, Key: r.Key, Payload: r.Value,
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, transport.Header{Key: h.Key, Value: h.Value})
	}
	s.pending = append(s.pending, transport.Event{Kind: transport.EventMessage, Message: m})
	if s.group {
		s.cl.MarkCommitRecords(r)
	}
}

// Close commits a group member's offsets, leaves the group and
// disconnects.
func (s *Subscriber) Close() error {
	s.once.Do(func() {
		close(s.closed)
		if s.group {
			ctx, cancel := context.WithTimeout(context.Background(), closeFlush)
			_ = s.cl.CommitUncommittedOffsets(ctx)
			cancel()
		}
		s.cl.Close()
	})
	return nil
}
