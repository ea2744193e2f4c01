package pipe

import (
	"sync"
	"sync/atomic"

	"github.com/brokerless/brokerless/transport"
)

// batch holds writes on their way from the goroutine that receives from
// the source to the one that publishes to the destination, so that each
// has a core of its own, and on until the destination's receipts. A
// received message's slices are valid only until the next Receive, so
// the batch copies them into chunks of memory that never move (a full
// chunk is followed by another, never regrown): its messages point into
// them, and a destination that keeps them until its receipts (one that
// publishes in place) needs no copy of its own. A batch is reused, its
// chunks and slices with it, once every write in it has its receipt: no
// allocation per message once the batches have grown.
type batch struct {
	msgs    []transport.Message
	tickets []uint64 // tickets[i] is the ticket of msgs[i]
	hdrs    []transport.Header
	chunks  [][]byte
	cur     int // the chunk being filled
	// left counts the writes whose receipt has not come; the receipt
	// that takes it to 0 gives the batch back to the pool.
	left atomic.Int64
}

// Chunk sizes: the first chunk of a batch holds minChunk bytes, each
// next one twice its predecessor, up to maxChunk (a larger value gets a
// chunk of its own size), so that a batch of a few small messages, many
// of which may wait for receipts at once, holds little memory.
const (
	minChunk = 4 << 10
	maxChunk = 1 << 20
)

// keep copies p into the batch's chunks: a slice capped at its end, so
// that an append to it cannot write over the next; nil stays nil.
func (b *batch) keep(p []byte) []byte {
	if p == nil {
		return nil
	}
	if len(b.chunks) == 0 || cap(b.chunks[b.cur])-len(b.chunks[b.cur]) < len(p) {
		b.nextChunk(len(p))
	}
	c := b.chunks[b.cur]
	at := len(c)
	c = append(c, p...)
	b.chunks[b.cur] = c
	return c[at:len(c):len(c)]
}

// nextChunk makes the next chunk, one with room for n bytes, current.
func (b *batch) nextChunk(n int) {
	if len(b.chunks) > 0 {
		b.cur++
	}
	for ; b.cur < len(b.chunks); b.cur++ { // one kept from an earlier use
		if cap(b.chunks[b.cur]) >= n {
			b.chunks[b.cur] = b.chunks[b.cur][:0]
			return
		}
	}
	size := minChunk
	if len(b.chunks) > 0 {
		size = min(maxChunk, 2*cap(b.chunks[len(b.chunks)-1]))
	}
	b.chunks = append(b.chunks, make([]byte, 0, max(size, n)))
	b.cur = len(b.chunks) - 1
}

// add copies w's message into the batch.
func (b *batch) add(w *Write) {
	m := &w.Message
	c := transport.Message{Time: m.Time, Key: b.keep(m.Key), Payload: b.keep(m.Payload)}
	if len(m.Headers) > 0 {
		at := len(b.hdrs)
		for _, h := range m.Headers {
			b.hdrs = append(b.hdrs, transport.Header{Key: h.Key, Value: b.keep(h.Value)})
		}
		// An append that moved hdrs left the headers of earlier
		// messages where they were, unchanged.
		c.Headers = b.hdrs[at:len(b.hdrs):len(b.hdrs)]
	}
	b.msgs = append(b.msgs, c)
	b.tickets = append(b.tickets, w.Ticket)
}

func (b *batch) reset() {
	b.msgs, b.tickets, b.hdrs = b.msgs[:0], b.tickets[:0], b.hdrs[:0]
	b.cur = 0
	if len(b.chunks) > 0 {
		b.chunks[0] = b.chunks[0][:0]
	}
}

// handoff passes batches from the receiving goroutine to the publishing
// one: the receiver adds to the current batch (Pipe.take, holding mu),
// which the publisher swaps for an empty one whenever it is free, so the
// batches are as large as the publisher is behind (at most MaxInFlight
// writes). Batches whose receipts have all come wait in free for reuse.
type handoff struct {
	mu    sync.Mutex
	cur   *batch
	ready chan struct{}
	free  chan *batch
}

// freeBatches bounds the batches kept for reuse; more are let go.
const freeBatches = 4

func newHandoff() *handoff {
	return &handoff{cur: &batch{}, ready: make(chan struct{}, 1), free: make(chan *batch, freeBatches)}
}

// take returns the current batch and puts an empty one in its place.
func (h *handoff) take() *batch {
	var spare *batch
	select {
	case spare = <-h.free:
	default:
		spare = &batch{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.cur
	h.cur = spare
	return b
}

// done records the receipt of one of b's writes; after the last, b is
// reset and kept for reuse.
func (h *handoff) done(b *batch) {
	if b.left.Add(-1) != 0 {
		return
	}
	b.reset()
	select {
	case h.free <- b:
	default:
	}
}
