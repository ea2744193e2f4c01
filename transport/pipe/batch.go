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
// the batch copies them into the pipe's chunks (see arena), which never
// move: its messages point into them, and a destination that keeps them
// until its receipts (one that publishes in place) needs no copy of its
// own. Once every write in it has its receipt, the batch gives its
// chunks back and is reused: no allocation per message once the pipe
// has warmed up.
type batch struct {
	msgs    []transport.Message
	tickets []uint64 // tickets[i] is the ticket of msgs[i]
	hdrs    []transport.Header
	chunks  []*chunk // the chunks its messages point into, each holding a reference
	// left counts the writes whose receipt has not come; the receipt
	// that takes it to 0 retires the batch.
	left atomic.Int64
}

// chunk is a piece of memory messages are copied into: filled from the
// start, never regrown, so that what it holds stays where it is. refs
// counts the batches that point into it, and the arena while it fills
// it; at 0 it is empty again.
type chunk struct {
	buf  []byte
	refs atomic.Int32
}

// chunkSize is the size of the arena's chunks; a value larger than a
// quarter of it gets a chunk of its own.
const chunkSize = 256 << 10

// arena hands out the room batches copy messages into: consecutive
// batches fill the same chunk, so a small batch holds no more than its
// bytes, and a chunk is reused once no batch points into it. Used by
// the receiving goroutine only (holding the handoff's mu); chunks come
// back from any goroutine, through free.
type arena struct {
	cur  *chunk
	free chan *chunk
}

// freeChunks bounds the chunks kept for reuse (16 MiB of them); more
// are let go.
const freeChunks = 64

// keep copies p into b's room: a slice capped at its end, so that an
// append to it cannot write over the next; nil stays nil.
func (a *arena) keep(b *batch, p []byte) []byte {
	if p == nil {
		return nil
	}
	c := a.cur
	if len(p) > chunkSize/4 {
		c = &chunk{buf: make([]byte, 0, len(p))} // its own, not reused
	} else if c == nil || cap(c.buf)-len(c.buf) < len(p) {
		c = a.next()
	}
	if n := len(b.chunks); n == 0 || b.chunks[n-1] != c {
		c.refs.Add(1)
		b.chunks = append(b.chunks, c)
	}
	at := len(c.buf)
	c.buf = append(c.buf, p...)
	return c.buf[at:len(c.buf):len(c.buf)]
}

// next makes an empty chunk current, letting the last one go.
func (a *arena) next() *chunk {
	if a.cur != nil {
		a.release(a.cur)
	}
	select {
	case a.cur = <-a.free:
	default:
		a.cur = &chunk{buf: make([]byte, 0, chunkSize)}
	}
	a.cur.refs.Store(1)
	return a.cur
}

// release drops a reference to c; the last empties c and keeps it for
// reuse.
func (a *arena) release(c *chunk) {
	if c.refs.Add(-1) != 0 || cap(c.buf) != chunkSize {
		return
	}
	c.buf = c.buf[:0]
	select {
	case a.free <- c:
	default:
	}
}

// add copies w's message into the batch, its bytes into a.
func (b *batch) add(a *arena, w *Write) {
	m := &w.Message
	c := transport.Message{Time: m.Time, Key: a.keep(b, m.Key), Payload: a.keep(b, m.Payload)}
	if len(m.Headers) > 0 {
		at := len(b.hdrs)
		for _, h := range m.Headers {
			b.hdrs = append(b.hdrs, transport.Header{Key: h.Key, Value: a.keep(b, h.Value)})
		}
		// An append that moved hdrs left the headers of earlier
		// messages where they were, unchanged.
		c.Headers = b.hdrs[at:len(b.hdrs):len(b.hdrs)]
	}
	b.msgs = append(b.msgs, c)
	b.tickets = append(b.tickets, w.Ticket)
}

// handoff passes batches from the receiving goroutine to the publishing
// one: the receiver adds to the current batch (Pipe.take, holding mu);
// a batch of batchMessages writes is full and queues in full for the
// publisher, which takes the oldest full batch, or else swaps the
// current one for an empty one, whenever it is free. So a publisher
// behind its source gets batchMessages writes a call, as many calls as
// it is behind (at most MaxInFlight writes in all), and one that keeps
// up gets what arrived while it published. Retired batches wait in free
// for reuse: their slices keep their room, so that a pipe that has
// warmed up allocates nothing for them, not even while it catches up.
type handoff struct {
	mu    sync.Mutex
	cur   *batch
	full  []*batch // full batches, oldest first
	arena arena    // used holding mu
	ready chan struct{}
	free  chan *batch
}

// batchMessages is the most writes a batch holds: what a destination
// is given at once when it is behind (as a Kafka client's batch), and
// the room every batch is made with.
const batchMessages = 1024

// freeBatches bounds the batches kept for reuse (DefaultMaxInFlight
// writes of them); more are let go.
const freeBatches = DefaultMaxInFlight / batchMessages

func newHandoff() *handoff {
	h := &handoff{arena: arena{free: make(chan *chunk, freeChunks)}, ready: make(chan struct{}, 1), free: make(chan *batch, freeBatches)}
	h.cur = h.spare()
	return h
}

// spare returns an empty batch: a retired one, or a new one with room
// for batchMessages writes of one header each.
func (h *handoff) spare() *batch {
	select {
	case b := <-h.free:
		return b
	default:
		return &batch{msgs: make([]transport.Message, 0, batchMessages), tickets: make([]uint64, 0, batchMessages), hdrs: make([]transport.Header, 0, batchMessages)}
	}
}

// add adds w to the current batch, queueing it first if it is full;
// call it holding mu.
func (h *handoff) add(w *Write) {
	if len(h.cur.msgs) == batchMessages {
		h.full = append(h.full, h.cur)
		h.cur = h.spare()
	}
	h.cur.add(&h.arena, w)
}

// take returns the oldest full batch, or else the current one, putting
// an empty one in its place, and whether more writes wait after it.
func (h *handoff) take() (b *batch, more bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.full) == 0 {
		b, h.cur = h.cur, h.spare()
		return b, false
	}
	b = h.full[0]
	n := copy(h.full, h.full[1:])
	h.full[n] = nil
	h.full = h.full[:n]
	return b, true // a batch queues only as a write comes for the next: cur is not empty
}

// done records the receipt of one of b's writes; after the last, b
// gives its chunks back and is kept for reuse.
func (h *handoff) done(b *batch) {
	if b.left.Add(-1) != 0 {
		return
	}
	for i, c := range b.chunks {
		h.arena.release(c)
		b.chunks[i] = nil
	}
	clear(b.msgs) // let go of what they point into
	b.msgs, b.tickets, b.hdrs, b.chunks = b.msgs[:0], b.tickets[:0], b.hdrs[:0], b.chunks[:0]
	select {
	case h.free <- b:
	default:
	}
}
