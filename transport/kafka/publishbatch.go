package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// PublishReceipts is PublishReceipt of each message of ms in turn, done
// called with its index, at a fraction of the cost for small messages:
// the records of ms, their headers and their bytes are three
// allocations, not three each, and share one promise. done is called on
// the client's promise goroutine, in publish order for each partition,
// and must not block. It returns how many of ms it took (their done
// will be called), and why not all when it took fewer: ctx ended, the
// publisher was closed, or an earlier Publish failed.
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
	b := p.newRecordBatch(ms, done, copyBytes)
	keep := context.WithoutCancel(ctx) // see produce
	for i := 0; i < len(b.recs); {
		k, err := p.slots.take(ctx, p.closing, len(b.recs)-i)
		if err != nil {
			p.settled(b, len(b.recs)-i) // never produced: no promise will come
			return i, err
		}
		for end := i + k; i < end; i++ {
			p.cl.Produce(keep, &b.recs[i].r, p.promise)
		}
	}
	return len(ms), nil
}

// recordBatch is the records of one PublishReceipts, and where their
// receipts go. Once every record's promise has been called the client
// holds none of it, and the publisher makes its next batch in the same
// memory (spareBatches): a pipe forwarding small messages made about
// 300 bytes of garbage a record otherwise.
type recordBatch struct {
	recs  []batchRecord
	hs    []kgo.RecordHeader // the records' headers
	bytes arena              // the copies of keys, payloads and header values (copyBytes)
	done  func(int, transport.Receipt, error)
	// open counts the records produced whose promise has yet to be called.
	open atomic.Int64
}

// spareBatches bounds how many retired record batches a publisher keeps
// for reuse, and maxSpareBytes how large a copy arena it keeps with one.
const (
	spareBatches  = 16
	maxSpareBytes = 4 << 20
)

// batchRecord is a record and its context, which leads its promise
// back to the batch: a record's Context is the one field of it the
// client keeps as it was given, and the promise is shared.
type batchRecord struct {
	r   kgo.Record
	ctx recordContext
}

// recordContext is a record's context: never done (the record is
// cancelled only by the client's close, as produce's), and its place
// in its batch.
type recordContext struct {
	context.Context
	b *recordBatch
	i int
}

// newRecordBatch makes ms into records, in a retired batch's memory
// when there is one: copies, as newRecord makes each, when copyBytes;
// else pointing at ms's bytes.
func (p *Publisher) newRecordBatch(ms []transport.Message, done func(int, transport.Receipt, error), copyBytes bool) *recordBatch {
	size, nh := 0, 0
	for i := range ms {
		if copyBytes {
			size += messageBytes(&ms[i])
		}
		nh += len(ms[i].Headers)
	}
	var b *recordBatch
	select {
	case b = <-p.spare:
	default:
		b = new(recordBatch)
	}
	a := arena(nil) // nil: take keeps its argument
	if copyBytes {
		if cap(b.bytes) < size {
			b.bytes = make(arena, 0, size)
		}
		a = b.bytes[:0]
	}
	b.recs = slices.Grow(b.recs[:0], len(ms))[:len(ms)]
	hs := slices.Grow(b.hs[:0], nh)
	b.hs, b.done = hs, done
	b.open.Store(int64(len(ms)))
	for i := range ms {
		m, br := &ms[i], &b.recs[i]
		if br.ctx.b != b {
			// A new slot. A reused one already holds this context, and
			// is not written: the client may read a record's context
			// after its promise (the goroutine waiting for a new
			// topic's metadata).
			br.ctx = recordContext{Context: context.Background(), b: b, i: i}
		}
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

// settled counts n more records of b whose promise was called (or never
// will be); after the last, b is kept for the next batch, emptied of
// every reference to the messages and the receipts' callback.
func (p *Publisher) settled(b *recordBatch, n int) {
	if b.open.Add(-int64(n)) != 0 {
		return
	}
	for i := range b.recs {
		b.recs[i].r = kgo.Record{} // the context stays: see newRecordBatch
	}
	clear(b.hs[:cap(b.hs)])
	b.done = nil
	if cap(b.bytes) > maxSpareBytes {
		b.bytes = nil
	}
	select {
	case p.spare <- b:
	default:
	}
}

// batchPromise is the promise of every record of PublishReceipts.
func (p *Publisher) batchPromise(r *kgo.Record, err error) {
	c := r.Context.(*recordContext)
	p.slots.put(1)
	if err != nil {
		c.b.done(c.i, transport.Receipt{}, fmt.Errorf("kafka transport: produce: %w", err))
		p.settled(c.b, 1)
		return
	}
	c.b.done(c.i, transport.Receipt{Stream: transport.StreamID{Topic: r.Topic, Partition: r.Partition}, Seq: uint64(r.Offset)}, nil)
	p.settled(c.b, 1)
}
