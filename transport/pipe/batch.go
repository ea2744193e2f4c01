package pipe

import (
	"slices"
	"sync"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// batch holds writes on their way from the goroutine that receives from
// the source to the one that publishes to the destination, so that each
// has a core of its own. A received message's slices are valid only
// until the next Receive, so the batch copies them into one arena, kept
// and reused: no allocation per message once it has grown.
type batch struct {
	items []item
	hdrs  []hdr
	arena []byte
}

// item is one write, its slices as spans of the arena.
type item struct {
	ticket           uint64
	time             time.Time
	key, payload     span
	hdrFrom, hdrTill int // its headers, hdrs[hdrFrom:hdrTill]
}

type hdr struct {
	key string
	val span
}

// span is a slice of the arena; nil when !set.
type span struct {
	off, n int
	set    bool
}

func (b *batch) keep(p []byte) span {
	if p == nil {
		return span{}
	}
	s := span{off: len(b.arena), n: len(p), set: true}
	b.arena = append(b.arena, p...)
	return s
}

func (b *batch) slice(s span) []byte {
	if !s.set {
		return nil
	}
	return b.arena[s.off : s.off+s.n : s.off+s.n]
}

func (b *batch) add(w *Write) {
	m := &w.Message
	it := item{ticket: w.Ticket, time: m.Time, key: b.keep(m.Key), payload: b.keep(m.Payload), hdrFrom: len(b.hdrs)}
	for _, h := range m.Headers {
		b.hdrs = append(b.hdrs, hdr{key: h.Key, val: b.keep(h.Value)})
	}
	it.hdrTill = len(b.hdrs)
	b.items = append(b.items, it)
}

// message is item i as a message; its headers are appended to hs[:0],
// returned for reuse. It stays valid until the batch is reset.
func (b *batch) message(i int, hs []transport.Header) (transport.Message, []transport.Header) {
	it := &b.items[i]
	hs = hs[:0]
	for _, h := range b.hdrs[it.hdrFrom:it.hdrTill] {
		hs = append(hs, transport.Header{Key: h.key, Value: b.slice(h.val)})
	}
	return transport.Message{Time: it.time, Key: b.slice(it.key), Payload: b.slice(it.payload), Headers: hs}, hs
}

// messages appends the batch's items as messages to ms, their headers
// to hs, and returns both for reuse. They stay valid until the batch is
// reset.
func (b *batch) messages(ms []transport.Message, hs []transport.Header) ([]transport.Message, []transport.Header) {
	hs = slices.Grow(hs, len(b.hdrs))
	for i := range b.items {
		it := &b.items[i]
		at := len(hs)
		for _, h := range b.hdrs[it.hdrFrom:it.hdrTill] {
			hs = append(hs, transport.Header{Key: h.key, Value: b.slice(h.val)})
		}
		m := transport.Message{Time: it.time, Key: b.slice(it.key), Payload: b.slice(it.payload)}
		if len(hs) > at {
			m.Headers = hs[at:len(hs):len(hs)]
		}
		ms = append(ms, m)
	}
	return ms, hs
}

func (b *batch) reset() {
	b.items, b.hdrs, b.arena = b.items[:0], b.hdrs[:0], b.arena[:0]
}

// handoff passes batches from the receiving goroutine to the publishing
// one: the receiver adds to the current batch (Pipe.take, holding mu),
// which the publisher swaps for an empty one whenever it is free, so the
// batches are as large as the publisher is behind (at most MaxInFlight
// writes).
type handoff struct {
	mu    sync.Mutex
	cur   *batch
	ready chan struct{}
}

func newHandoff() *handoff { return &handoff{cur: &batch{}, ready: make(chan struct{}, 1)} }

// take returns the current batch and puts spare, reset, in its place.
func (h *handoff) take(spare *batch) *batch {
	spare.reset()
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.cur
	h.cur = spare
	return b
}
