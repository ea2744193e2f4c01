package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// Publisher produces messages to a topic with an idempotent kgo producer.
// Publish hands the record to the client's buffer and returns; an error
// the broker answers later is returned by the next Publish or Flush.
type Publisher struct {
	cl    *kgo.Client
	topic string

	mu     sync.Mutex
	err    error // first asynchronous produce error not yet returned
	closed bool
}

var _ transport.Publisher = (*Publisher)(nil)

// NewPublisher connects a producer.
func NewPublisher(ctx context.Context, cfg Config) (*Publisher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Brokers that auto-create topics (logd --auto-create, Kafka's
	// default) create the topic on first produce.
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic), kgo.AllowAutoTopicCreation()}
	if cfg.LeaderAcks {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(append(opts, cfg.Options...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	return &Publisher{cl: cl, topic: cfg.Topic}, nil
}

// Semantics of the transport.
func (p *Publisher) Semantics() transport.Semantics { return semantics }

const semantics = transport.Ordered | transport.GapReports | transport.Deduplicated | transport.Durable | transport.Replay

// Publish buffers m as a record: the message's topic (the URL's topic
// when empty), key, headers, time and payload. It blocks, honouring ctx,
// while the client's buffer is full.
func (p *Publisher) Publish(ctx context.Context, m transport.Message) error {
	if err := p.pending(); err != nil {
		return err
	}
	r := &kgo.Record{Topic: m.Topic, Key: clone(m.Key), Value: clone(m.Payload), Timestamp: m.Time}
	if r.Topic == "" {
		r.Topic = p.topic
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: clone(h.Value)})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.cl.Produce(ctx, r, func(_ *kgo.Record, perr error) {
		// A record refused because ctx ended while waiting for buffer
		// room is reported by this Publish, not a later one.
		if perr != nil && (ctx.Err() == nil || !errors.Is(perr, ctx.Err())) {
			p.fail(perr)
		}
	})
	return ctx.Err()
}

// Flush waits until every record published so far is acknowledged.
func (p *Publisher) Flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	return p.pending()
}

// Close flushes (for at most a few seconds) and disconnects.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeFlush)
	defer cancel()
	err := p.cl.Flush(ctx)
	p.cl.Close()
	if perr := p.pending(); err == nil && !errors.Is(perr, transport.ErrClosed) {
		err = perr
	}
	return err
}

func (p *Publisher) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = fmt.Errorf("kafka transport: produce: %w", err)
	}
}

// pending returns (and forgets) an asynchronous error, or ErrClosed.
func (p *Publisher) pending() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return transport.ErrClosed
	}
	err := p.err
	p.err = nil
	return err
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
