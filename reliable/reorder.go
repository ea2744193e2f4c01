package reliable

// heldDatagram is a copy of a datagram some of whose frames wait in the
// reorder buffer for an earlier loss to be repaired. Copying whole
// datagrams, once each, keeps memory counted exactly in bytes and avoids
// an allocation per frame.
type heldDatagram struct {
	buf  []byte
	base int64
	refs int
}

type heldFrame struct {
	seq    uint64 // 0: empty
	d      *heldDatagram
	off, n uint32
}

// reorder holds frames that arrived ahead of a loss, in a ring indexed by
// sequence number, bounded by frame count and bytes. The ring starts
// small and doubles, up to maxFrames, as the span of held frames grows.
type reorder struct {
	slots     []heldFrame
	mask      uint64
	maxFrames int
	bytes     int
	maxBytes  int
	free      []*heldDatagram
	cur       *heldDatagram // copy of the datagram being processed, once made
}

const (
	maxFreeHeld  = 64
	minRingSlots = 1024
)

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
func (r *reorder) hold(next, seq uint64, b []byte, base int64, f *Frame) bool {
	r.fit(next, seq)
	if r.cur == nil {
		d := r.acquire(len(b))
		if d == nil {
			return false
		}
		d.buf = append(d.buf[:0], b...)
		d.base = base
		r.cur = d
	}
	r.cur.refs++
	r.slots[seq&r.mask] = heldFrame{seq: seq, d: r.cur, off: uint32(f.Off), n: uint32(f.Len)}
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
	var d *heldDatagram
	if k := len(r.free); k > 0 && cap(r.free[k-1].buf) >= size {
		d, r.free = r.free[k-1], r.free[:k-1]
	} else {
		d = &heldDatagram{buf: make([]byte, 0, max(size, 2048))}
	}
	if r.bytes+cap(d.buf) > r.maxBytes {
		r.release(d)
		return nil
	}
	r.bytes += cap(d.buf)
	return d
}

// take removes the frame held under seq and decodes it. The frame's
// slices stay valid until done(d) is called.
func (r *reorder) take(seq uint64) (Frame, *heldDatagram, bool) {
	h := &r.slots[seq&r.mask]
	if h.seq != seq {
		return Frame{}, nil, false
	}
	d := h.d
	f, _, err := decodeFrame(d.buf[h.off:h.off+h.n], d.base)
	*h = heldFrame{}
	if err != nil {
		r.done(d)
		return Frame{}, nil, false
	}
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
	r.release(d)
}

func (r *reorder) release(d *heldDatagram) {
	if len(r.free) < maxFreeHeld {
		r.free = append(r.free, d)
	}
}
