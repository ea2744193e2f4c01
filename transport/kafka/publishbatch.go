package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// PublishReceipts is PublishReceipt of each message of ms in turn, done
// called with its index, at a fraction of the cost for small messages:
// the records of ms and their headers come from a pool, their bytes are
// one allocation, and they share one promise. done is called on
// the client's promise goroutine, in publish order for each partition,
// and must not block. It returns how many of ms it took (their done
// will be called), and why not all when it took fewer: ctx ended, the
// publisher was closed, an earlier Publish failed, or a message's topic
// is one Kafka would refuse (as Publish, it takes the messages before
// that one, and refuses it and those after it at once).
func (p *Publisher) PublishReceipts(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	return p.publishReceipts(ctx, ms, done, true)
}

// PublishReceiptsInPlace is PublishReceipts without the copy: the
// records point at the keys, payloads and header values of ms, which
// the caller must leave unchanged until done has been called for each
// message taken (ms itself, and its Headers slices, it may reuse once
// PublishReceiptsInPlace returns). A pipe, which keeps what it forwards
// until the receipts, spares a copy of every message this way.
func (p *Publisher) PublishReceiptsInPlace(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	return p.publishReceipts(ctx, ms, done, false)
}

// publishReceipts is PublishReceipts, copying ms's bytes when copyBytes.
func (p *Publisher) publishReceipts(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error), copyBytes bool) (int, error) {
	if err := p.pending(); err != nil {
		return 0, err
	}
	ms, bad := validTopics(ms)
	if len(ms) == 0 {
		return 0, bad
	}
	b := p.newRecordBatch(ms, done, copyBytes)
	keep := context.WithoutCancel(ctx) // see produce
	// n, not len(b.recs): once the last record is produced, its promise
	// may give b back to the pool, and another call take and refill it,
	// before this loop looks at b again.
	n := len(ms)
	for i := 0; i < n; {
		k, err := p.slots.take(ctx, p.closing, n-i)
		if err != nil {
			b.finished(n - i) // never produced: no promise
			return i, err
		}
		for end := i + k; i < end; i++ {
			p.cl.Produce(keep, &b.recs[i].r, p.promise)
		}
	}
	return n, bad
}

// validTopics returns the messages of ms before the first whose topic
// Kafka would refuse, and the error refusing that one (nil when none).
func validTopics(ms []transport.Message) ([]transport.Message, error) {
	for i := range ms {
		if ms[i].Topic == "" {
			continue
		}
		if err := checkTopic(ms[i].Topic); err != nil {
			return ms[:i], fmt.Errorf("kafka transport: message %d's %w", i, err)
		}
	}
	return ms, nil
}

// recordBatch is the records of one PublishReceipts, and where their
// receipts go. It goes back to recordBatches once every record's
// promise has run (the client leaves a record alone from then on), so
// that its records, about 200 bytes each, are not allocated, zeroed and
// collected again for every call.
type recordBatch struct {
	recs []batchRecord
	hs   []kgo.RecordHeader
	done func(int, transport.Receipt, error)
	left atomic.Int64 // records whose promise has not run
}

// recordBatches holds the recordBatches no record of which is in the
// client any more.
var recordBatches sync.Pool

// finished counts n records of b done with, and gives b back to
// recordBatches after the last. The records keep pointing at what they
// were given until b is reused or the pool is emptied, as a pool's
// buffer keeps its old bytes.
func (b *recordBatch) finished(n int) {
	if b.left.Add(-int64(n)) == 0 {
		b.done = nil
		recordBatches.Put(b)
	}
}

// batchRecord is a record and its context, which leads its promise
// back to the batch: a record's Context is the one field of it the
// client keeps as it was given, and the promise is shared.
type batchRecord struct {
	r   kgo.Record
	ctx recordContext
}

// recordContext is a record's context: never done (the record is
// cancelled only by the client's close, as produce's), and its place
// in its batch. It is written once, when its batch's records are made,
// and stays the same while the batch is reused: the client may call its Done after
// the record's promise (a goroutine waiting for the metadata of a topic
// new to it keeps the first record's context), so a reused batch must
// not write it again.
type recordContext struct {
	context.Context
	b *recordBatch
	i int
}

// newRecordBatch makes ms into records: copies, as newRecord makes
// each, when copyBytes; else pointing at ms's bytes.
func (p *Publisher) newRecordBatch(ms []transport.Message, done func(int, transport.Receipt, error), copyBytes bool) *recordBatch {
	size, nh := 0, 0
	for i := range ms {
		if copyBytes {
			size += messageBytes(&ms[i])
		}
		nh += len(ms[i].Headers)
	}
	var a arena // nil: take keeps its argument
	if copyBytes {
		a = make([]byte, 0, size)
	}
	b, _ := recordBatches.Get().(*recordBatch)
	if b == nil {
		b = new(recordBatch)
	}
	if cap(b.recs) < len(ms) {
		b.recs = make([]batchRecord, len(ms))
		for i := range b.recs { // once: see recordContext
			b.recs[i].ctx = recordContext{Context: context.Background(), b: b, i: i}
		}
	}
	if cap(b.hs) < nh {
		b.hs = make([]kgo.RecordHeader, 0, nh)
	}
	b.recs, b.done = b.recs[:len(ms)], done
	b.left.Store(int64(len(ms)))
	hs := b.hs[:0]
	for i := range ms {
		m, br := &ms[i], &b.recs[i]
		br.r = kgo.Record{Topic: m.Topic, Key: a.take(m.Key), Value: a.take(m.Payload), Timestamp: m.Time, Partition: p.partition, Context: &br.ctx}
		if br.r.Topic == "" {
			br.r.Topic = p.topic
		}
		if len(m.Headers) > 0 {
			at := len(hs)
			for _, h := range m.Headers {
				hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: a.take(h.Value)})
			}
			br.r.Headers = hs[at:len(hs):len(hs)]
		}
	}
	return b
}

// batchPromise is the promise of every record of PublishReceipts.
func (p *Publisher) batchPromise(r *kgo.Record, err error) {
	c := r.Context.(*recordContext)
	b := c.b
	if err != nil {
		b.done(c.i, transport.Receipt{}, fmt.Errorf("kafka transport: produce: %w", err))
	} else {
		b.done(c.i, transport.Receipt{Stream: transport.StreamID{Topic: r.Topic, Partition: r.Partition}, Seq: uint64(r.Offset)}, nil)
	}
	p.slots.put(1) // after done: Close waits for the slots (see Close)
	b.finished(1)  // r and c may be reused from here
}
