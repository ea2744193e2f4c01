package pipe

import (
	"bytes"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestArenaChunks: consecutive batches share a chunk, which is reused
// only once the arena has moved past it and every batch that points
// into it is retired; a value too large for a shared chunk gets one of
// its own, never reused.
func TestArenaChunks(t *testing.T) {
	h := newHandoff()
	add := func(seq uint64, size int) {
		h.add(&Write{Ticket: seq, Message: transport.Message{Payload: bytes.Repeat([]byte{byte(seq)}, size)}})
	}
	retire := func(b *batch) {
		b.left.Store(int64(len(b.msgs)) + 1)
		for range len(b.msgs) + 1 {
			h.done(b)
		}
	}
	add(1, 100)
	b1, _ := h.take()
	add(2, 100)
	b2, _ := h.take()
	if len(b1.chunks) != 1 || len(b2.chunks) != 1 || b1.chunks[0] != b2.chunks[0] {
		t.Fatalf("two small batches in %d and %d chunks, shared: %v", len(b1.chunks), len(b2.chunks), b1.chunks[0] == b2.chunks[0])
	}
	first := b1.chunks[0]
	retire(b1)
	add(3, chunkSize/4) // fills the first chunk past its room: the next one
	add(4, chunkSize/4)
	add(5, chunkSize/4)
	add(6, chunkSize/4)
	b3, _ := h.take()
	if len(h.arena.free) != 0 {
		t.Fatal("a chunk was reused while a batch pointed into it")
	}
	if got := b2.msgs[0].Payload; !bytes.Equal(got, bytes.Repeat([]byte{2}, 100)) {
		t.Fatalf("batch 2's message changed: %v…", got[:4])
	}
	retire(b2)
	if len(h.arena.free) != 0 || first.refs.Load() != 1 {
		t.Fatalf("batch 3 points into the first chunk too: %d chunks free, %d references", len(h.arena.free), first.refs.Load())
	}
	retire(b3)
	if len(h.arena.free) != 1 || len(first.buf) != 0 || first.refs.Load() != 0 {
		t.Fatalf("after its last batch retired: %d chunks free, the chunk holds %d bytes, %d references", len(h.arena.free), len(first.buf), first.refs.Load())
	}
	add(7, chunkSize/4+1)
	b4, _ := h.take()
	own := b4.chunks[0]
	if cap(own.buf) != chunkSize/4+1 {
		t.Fatalf("a large value went into a chunk of %d bytes", cap(own.buf))
	}
	retire(b4)
	for len(h.arena.free) > 0 {
		if c := <-h.arena.free; c == own {
			t.Fatal("a large value's own chunk was kept for reuse")
		}
	}
}

// TestHandoffFullBatches: writes beyond batchMessages queue as full
// batches, taken oldest first, then the batch still filling; every
// write comes out once, in order, and a retired batch comes back with
// its room.
func TestHandoffFullBatches(t *testing.T) {
	h := newHandoff()
	const n = 2*batchMessages + batchMessages/2
	for i := range n {
		h.add(&Write{Ticket: uint64(i), Message: transport.Message{Payload: []byte{byte(i)}}})
	}
	next := uint64(0)
	var taken []*batch
	for more, calls := true, 0; more; calls++ {
		if calls == 3 {
			t.Fatal("more than 3 batches for 2.5 batches of writes")
		}
		var b *batch
		b, more = h.take()
		if len(b.msgs) > batchMessages {
			t.Fatalf("a batch of %d writes, over %d", len(b.msgs), batchMessages)
		}
		for i, tk := range b.tickets {
			if tk != next || b.msgs[i].Payload[0] != byte(tk) {
				t.Fatalf("write %d came out as ticket %d, payload %d", next, tk, b.msgs[i].Payload[0])
			}
			next++
		}
		taken = append(taken, b)
	}
	if next != n {
		t.Fatalf("%d writes came out of %d", next, n)
	}
	if b, more := h.take(); len(b.msgs) != 0 || more {
		t.Fatalf("after the last: a batch of %d, more %v", len(b.msgs), more)
	}
	for _, b := range taken {
		b.left.Store(int64(len(b.msgs)))
		for range len(b.msgs) {
			h.done(b)
		}
	}
	if b := h.spare(); b != taken[0] || cap(b.msgs) < batchMessages || len(b.msgs) != 0 {
		t.Fatalf("the first retired batch did not come back empty with its room (cap %d, len %d)", cap(b.msgs), len(b.msgs))
	}
}
