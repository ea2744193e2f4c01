package reliable

import "sync"

// heldDatagram is a copy of a datagram some of whose frames wait in the
// reorder buffer for an earlier loss to be repaired. Copying whole
// datagrams, once each, keeps memory counted exactly in bytes and avoids
// an allocation per frame.
type heldDatagram struct {
	buf  []byte
	refs int
}

// heldFrame is a decoded frame whose bytes live in a heldDatagram: its
// slices are kept as spans of the datagram, so taking it out does not
// decode it again.
type heldFrame struct {
	seq                     uint64 // 0: empty
	d                       *heldDatagram
	time                    int64
	total                   int32
	nhdrs                   uint8
	flags                   uint8
	topic, key, hdrs, chunk span
}

// span locates a slice within its datagram.
type span struct{ off, n uint32 }

// spanOf locates s, a slice of datagram b made without a capacity
// limit, by the capacity it leaves: the datagram's copy has the same
// layout.
func spanOf(b, s []byte) span {
	if len(s) == 0 {
		return span{}
	}
	return span{uint32(cap(b) - cap(s)), uint32(len(s))}
}

func (sp span) in(buf []byte) []byte { return buf[sp.off : sp.off+sp.n] }

// reorder holds frames that arrived ahead of a loss, in a ring indexed by
// sequence number, bounded by frame count and bytes. The ring starts
// small and doubles, up to maxFrames, as the span of held frames grows.
type reorder struct {
	slots     []heldFrame
	mask      uint64
	maxFrames int
	bytes     int
	maxBytes  int
	cur       *heldDatagram // copy of the datagram being processed, once made
}

const minRingSlots = 1024

// heldPool recycles datagram copies. A burst of loss at line rate holds
// thousands of them at once; a pool (rather than a small free list)
// keeps them from being garbage after every repair, and lets the garbage
// collector take them back when loss stops.
var heldPool = sync.Pool{New: func() any { return &heldDatagram{buf: make([]byte, 0, 2048)} }}

func newReorder(maxFrames, maxBytes int) reorder {
	n := min(minRingSlots, maxFrames)
	return reorder{slots: make([]heldFrame, n), mask: uint64(n - 1), maxFrames: maxFrames, maxBytes: maxBytes}
}

func (r *reorder) has(seq uint64) bool { return r.slots[seq&r.mask].seq == seq }

// fit grows the ring, if needed, so that it can hold every sequence from
// next to seq; seq-next is below maxFrames.
func (r *reorder) fit(next, seq uint64) {
	if seq-next < uint64(len(r.slots)) {
		return
	}
	n := len(r.slots)
	for uint64(n) <= seq-next {
		n *= 2
	}
	slots := make([]heldFrame, n)
	mask := uint64(n - 1)
	for _, h := range r.slots {
		if h.seq != 0 {
			slots[h.seq&mask] = h
		}
	}
	r.slots, r.mask = slots, mask
}

// hold keeps frame f of datagram b under seq, next being the stream's
// next sequence to deliver. It reports false when copying b would pass
// the byte bound.
func (r *reorder) hold(next, seq uint64, b []byte, f *Frame) bool {
	r.fit(next, seq)
	if r.cur == nil {
		d := r.acquire(len(b))
		if d == nil {
			return false
		}
		d.buf = append(d.buf[:0], b...)
		r.cur = d
	}
	r.cur.refs++
	r.slots[seq&r.mask] = heldFrame{
		seq: seq, d: r.cur, time: f.Time, total: int32(f.Total), nhdrs: uint8(f.NumHeaders), flags: f.Flags,
		topic: spanOf(b, f.Topic), key: spanOf(b, f.Key), hdrs: spanOf(b, f.headers), chunk: spanOf(b, f.Chunk),
	}
	return true
}

// endDatagram forgets the copy of the datagram just processed; frames
// held from it keep it alive.
func (r *reorder) endDatagram() {
	if d := r.cur; d != nil {
		r.cur = nil
		if d.refs == 0 {
			r.free1(d)
		}
	}
}

func (r *reorder) acquire(size int) *heldDatagram {
	d := heldPool.Get().(*heldDatagram)
	if cap(d.buf) < size {
		d.buf = make([]byte, 0, size)
	}
	if r.bytes+cap(d.buf) > r.maxBytes {
		heldPool.Put(d)
		return nil
	}
	r.bytes += cap(d.buf)
	return d
}

// take removes the frame held under seq. The frame's slices stay valid
// until done(d) is called.
func (r *reorder) take(seq uint64) (Frame, *heldDatagram, bool) {
	h := &r.slots[seq&r.mask]
	if h.seq != seq {
		return Frame{}, nil, false
	}
	d := h.d
	f := Frame{
		Flags: h.flags, Time: h.time, Total: int(h.total), NumHeaders: int(h.nhdrs),
		Topic: h.topic.in(d.buf), Key: h.key.in(d.buf), headers: h.hdrs.in(d.buf), Chunk: h.chunk.in(d.buf),
	}
	*h = heldFrame{}
	return f, d, true
}

// done drops one reference to d.
func (r *reorder) done(d *heldDatagram) {
	d.refs--
	if d.refs == 0 && d != r.cur {
		r.free1(d)
	}
}

func (r *reorder) free1(d *heldDatagram) {
	r.bytes -= cap(d.buf)
	heldPool.Put(d)
}
