package kafka

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// Publisher produces messages to a topic with a kgo producer, idempotent
// unless Config.LeaderAcks. Publish hands the record to the client's
// bounded buffer and returns; an error the broker answers later is
// returned by the next Publish or Flush. PublishReceipt reports each
// record's partition and offset instead.
type Publisher struct {
	cl        *kgo.Client
	topic     string
	partition int32 // -1: by key hash
	sem       transport.Semantics

	// slots counts the free places in the client's buffer, so Publish
	// waits for room here, honouring its context, and kgo's Produce
	// never blocks: a record Publish accepted is then never failed by
	// the caller's context ending later.
	slots   *slots
	closing chan struct{}
	// promise is batchPromise, made once: the promise of every record
	// of PublishReceipts.
	promise func(*kgo.Record, error)

	mu     sync.Mutex
	err    error // first asynchronous produce error not yet returned
	closed bool
	// closeOnce runs the first Close; closeErr is what it returned,
	// which every Close returns.
	closeOnce sync.Once
	closeErr  error
}

var (
	_ transport.Publisher        = (*Publisher)(nil)
	_ transport.ReceiptPublisher = (*Publisher)(nil)
)

// NewPublisher connects a producer.
func NewPublisher(ctx context.Context, cfg Config) (*Publisher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Brokers that auto-create topics (logd by default, Kafka's
	// default) create the topic on first produce.
	opts := []kgo.Opt{kgo.DefaultProduceTopic(cfg.Topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(cfg.Linger), kgo.MaxBufferedRecords(cmp.Or(cfg.MaxBuffered, DefaultMaxBuffered))}
	if cfg.Compression != "" {
		opts = append(opts, kgo.ProducerBatchCompression(codec(cfg.Compression)...))
	}
	partition := int32(-1)
	if len(cfg.Partitions) == 1 {
		partition = cfg.Partitions[0]
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if cfg.LeaderAcks {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	cl, err := cfg.newClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka transport: %w", err)
	}
	p := &Publisher{
		cl: cl, topic: cfg.Topic, partition: partition, sem: cfg.Semantics(),
		slots: newSlots(maxBuffered(cl)), closing: make(chan struct{}),
	}
	p.promise = p.batchPromise
	return p, nil
}

// maxBuffered is the client's MaxBufferedRecords (TestMaxBuffered
// checks that kgo still reports it as an int64).
func maxBuffered(cl *kgo.Client) int {
	if n, ok := cl.OptValue(kgo.MaxBufferedRecords).(int64); ok {
		return int(max(n, 1))
	}
	return 10000 // kgo's default
}

// Semantics of the publisher's configuration (see Config.Semantics).
func (p *Publisher) Semantics() transport.Semantics { return p.sem }

// Publish buffers m as a record: the message's topic (the URL's topic
// when empty), key, headers, time and payload. It blocks, honouring ctx,
// while the client's buffer is full. A message whose topic Kafka would
// refuse is refused at once.
func (p *Publisher) Publish(ctx context.Context, m transport.Message) error {
	return p.produce(ctx, m, p.published)
}

// published is the promise of a record given to Publish.
func (p *Publisher) published(_ *kgo.Record, err error) {
	if err != nil {
		p.fail(err)
	}
	p.slots.put(1) // after fail: Close waits for the slots (see Close)
}

// PublishReceipt is Publish, then done with the record's partition
// (Receipt.Stream: topic and partition) and offset (Receipt.Seq) once
// the broker has acknowledged it — with acks=all, once it is durable —
// or with the error that failed it. done is called on the client's
// promise goroutine, in publish order for each partition, and must not
// block. An error of a record given to PublishReceipt goes to its done
// only, not to a later Publish or Flush.
func (p *Publisher) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	return p.produce(ctx, m, func(r *kgo.Record, err error) {
		defer p.slots.put(1) // after done: Close waits for the slots (see Close)
		if err != nil {
			done(transport.Receipt{}, fmt.Errorf("kafka transport: produce: %w", err))
			return
		}
		done(transport.Receipt{Stream: transport.StreamID{Topic: r.Topic, Partition: r.Partition}, Seq: uint64(r.Offset)}, nil)
	})
}

// produce waits for a slot in the client's buffer and hands m to it;
// promise, which must give the slot back (p.slots.put(1)), is called once the
// record is acknowledged or failed, unless produce returns an error.
func (p *Publisher) produce(ctx context.Context, m transport.Message, promise func(*kgo.Record, error)) error {
	if err := p.pending(); err != nil {
		return err
	}
	if m.Topic != "" {
		if err := checkTopic(m.Topic); err != nil {
			return fmt.Errorf("kafka transport: a message's %w", err)
		}
	}
	r := newRecord(m)
	r.Partition = p.partition
	if r.Topic == "" {
		r.Topic = p.topic
	}
	if _, err := p.slots.take(ctx, p.closing, 1); err != nil {
		return err
	}
	// With a slot held, the buffer has room and Produce does not block.
	// Its context only cancels the buffered record, which nothing should
	// do but the client's own close.
	p.cl.Produce(context.WithoutCancel(ctx), r, promise)
	return nil
}

// Flush waits until every record published so far is acknowledged.
func (p *Publisher) Flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	return p.pending()
}

// Close flushes (for at most a few seconds) and disconnects; records
// still buffered then fail (a PublishReceipt's done gets the error).
// When it returns, every done of a record taken has been called, unless
// the dones take more than a few seconds more. A Close called while
// another runs waits for it; every Close returns the first one's result.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.closing)
		p.mu.Unlock()
		p.closeErr = p.close()
	})
	return p.closeErr
}

// close is the first Close's work: flush, disconnect, wait for the
// promises.
func (p *Publisher) close() error {
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeFlush)
	defer cancel()
	if ferr := p.cl.Flush(ctx); err == nil && ferr != nil {
		err = fmt.Errorf("kafka transport: close: what was published was not acknowledged within %v: %w", closeFlush, ferr)
	}
	p.cl.Close()
	// The client fails what it still held on its own promise goroutine,
	// after its Close returned: wait for those promises (each gives its
	// slot back), so that no done runs after Close, and a Publish's
	// failure is in p.err below.
	dctx, dcancel := context.WithTimeout(context.Background(), closeFlush)
	defer dcancel()
	if derr := p.slots.drain(dctx); err == nil && derr != nil {
		err = fmt.Errorf("kafka transport: close: receipts still running after %v: %w", closeFlush, derr)
	}
	p.mu.Lock()
	if err == nil {
		err = p.err
	}
	p.mu.Unlock()
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

// newRecord copies m into a record: key, payload and header values in
// one allocation, since the caller may reuse m's buffers at once (a
// pipe forwarding small messages spent most of its time in per-header
// copies).
func newRecord(m transport.Message) *kgo.Record {
	a := arena(make([]byte, 0, messageBytes(&m)))
	r := &kgo.Record{Topic: m.Topic, Key: a.take(m.Key), Value: a.take(m.Payload), Timestamp: m.Time}
	if len(m.Headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: a.take(h.Value)}
		}
	}
	return r
}

// messageBytes is what copying m's key, payload and header values takes.
func messageBytes(m *transport.Message) int {
	n := len(m.Key) + len(m.Payload)
	for _, h := range m.Headers {
		n += len(h.Value)
	}
	return n
}

// arena copies byte slices into one allocation made with room for all.
type arena []byte

// take copies b into the arena: a slice capped at its end, so that an
// append to it cannot write over the next; nil stays nil. A nil arena
// copies nothing: take returns b itself.
func (a *arena) take(b []byte) []byte {
	if b == nil || *a == nil {
		return b
	}
	at := len(*a)
	*a = append(*a, b...)
	return (*a)[at:len(*a):len(*a)]
}
