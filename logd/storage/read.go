package storage

import (
	"fmt"
	"sort"
	"sync"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// Read returns whole batches starting with the one that holds offset,
// at most maxBytes of them but always at least that one batch (Kafka's
// fetch semantics), all from one segment. It returns nothing for an
// offset at or above the high watermark, ErrOffsetOutOfRange below the
// log start or above the log end. Every batch returned has passed its
// CRC check in this process — when appended, in recovery, or on its
// first read, which checks every batch not checked yet — and a batch
// that fails it is never returned (an error is, if it is the first).
//
// After compaction the batch returned may start after offset: the
// records before it were compacted away.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	return l.ReadAppend(nil, offset, maxBytes)
}

// ReadAppend is Read appending to dst, so a caller can reuse a buffer.
func (l *Log) ReadAppend(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if l.isClosed.Load() {
		return dst, ErrClosed
	}
	if offset < l.start.Load() || offset > l.endA.Load() {
		return dst, ErrOffsetOutOfRange
	}
	if offset >= l.hwm.Load() {
		return dst, nil
	}
	i := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })-1, 0)
	for ; i < len(l.segs); i++ {
		s := l.segs[i]
		limit := s.visible.Load()
		pos, found, err := l.locate(s, offset, limit)
		if err != nil {
			return dst, err
		}
		if found {
			return l.readAt(dst, s, pos, limit, offset, maxBytes)
		}
	}
	return dst, nil
}

// locate finds the position of the first batch of s whose last offset
// is ≥ offset, below limit: from the read hints (where the previous read
// ended), else from the offset index and a walk over batch headers.
func (l *Log) locate(s *segment, offset, limit int64) (int64, bool, error) {
	if pos, ok := l.hints.get(s.base, offset); ok && pos < limit {
		return pos, true, nil
	}
	var pos int64
	if offset > s.base {
		var e offEntry
		var err error
		if s.sealed {
			e, err = lookupOffset(&s.off, uint32(min(offset-s.base, 1<<32-1)))
		} else {
			l.idxMu.Lock()
			x := s.off
			l.idxMu.Unlock()
			e, err = lookupOffset(&x, uint32(min(offset-s.base, 1<<32-1)))
		}
		if err != nil {
			return 0, false, err
		}
		pos = int64(e.pos)
	}
	bp := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(bp)
	sc := newScanner(s.log, pos, limit, false, (*bp)[:0])
	for {
		at, b, err := sc.next()
		if err != nil {
			if at >= limit {
				return 0, false, nil
			}
			return 0, false, l.corrupt(s, at, err)
		}
		if p, _ := peekBatch(b); p.last() >= offset {
			return at, true, nil
		}
	}
}

// locateBufBytes is the read size of locate's walk: a few index
// intervals of headers.
const locateBufBytes = 16 << 10

var scanBufs = sync.Pool{New: func() any { b := make([]byte, 0, locateBufBytes); return &b }}

// readAt appends batches from pos: the first whole, then as many more as
// fit in maxBytes, each checked (length, magic, CRC, ascending offsets).
func (l *Log) readAt(dst []byte, s *segment, pos, limit, offset int64, maxBytes int) ([]byte, error) {
	n := min(limit-pos, int64(max(maxBytes, batchPeekLen)))
	start := len(dst)
	dst = grow(dst, int(n))
	if _, err := s.log.ReadAt(dst[start:start+int(n)], pos); err != nil {
		return dst[:start], err
	}
	first, _ := peekBatch(dst[start:])
	if first.size < batchHeaderLen || pos+first.size > limit {
		return dst[:start], l.corrupt(s, pos, errLength)
	}
	if first.size > n {
		// The first batch is larger than maxBytes: it is returned whole.
		have := n
		n = first.size
		dst = grow(dst[:start+int(have)], int(n-have))
		if _, err := s.log.ReadAt(dst[start+int(have):start+int(n)], pos+have); err != nil {
			return dst[:start], err
		}
	}
	b := dst[start : start+int(n)]
	var used int64
	prev := offset - 1
	checked := s.checked.Load()
	for used+batchPeekLen <= n {
		p, _ := peekBatch(b[used:])
		if p.size < batchHeaderLen || used+p.size > n {
			break
		}
		var err error
		if end := pos + used + p.size; end > checked {
			if err = checkFrame(b[used : used+p.size]); err == nil && pos+used <= checked {
				checked = end
				s.advanceChecked(end)
			}
		}
		if err == nil && (p.last() <= prev || p.lastDelta < 0) {
			err = errOffsetOrder
		}
		if err != nil {
			if used == 0 {
				return dst[:start], l.corrupt(s, pos, err)
			}
			l.corrupt(s, pos+used, err)
			break
		}
		prev = p.last()
		used += p.size
	}
	l.hints.put(s.base, offset, prev+1, pos+used)
	if next := pos + used; next < limit {
		// Start reading what a sequential reader asks for next, so the
		// disk works while this read travels to the client.
		if r, ok := s.log.(vfs.Readaheader); ok {
			r.Readahead(next, min(limit-next, int64(maxBytes)))
		}
	}
	return dst[:start+int(used)], nil
}

// advanceChecked raises s.checked to end (concurrent readers may race
// to do it).
func (s *segment) advanceChecked(end int64) {
	for {
		c := s.checked.Load()
		if c >= end || s.checked.CompareAndSwap(c, end) {
			return
		}
	}
}

// corrupt reports a batch that fails its checks on disk: it is logged
// and never served.
func (l *Log) corrupt(s *segment, pos int64, err error) error {
	l.env.logger.Error("storage: corrupt batch on disk", "topic", l.topic, "partition", l.partition,
		"segment", s.base, "position", pos, "err", err)
	return fmt.Errorf("%w: %s/%d segment %d position %d: %v", ErrCorruptBatch, l.topic, l.partition, s.base, pos, err)
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// readHints remember where recent reads ended, so a consumer reading on
// from there skips the index lookup.
type readHints struct {
	mu sync.Mutex
	h  [4]readHint
	i  int
}

type readHint struct {
	seg, offset, pos int64
	ok               bool
}

func (r *readHints) get(seg, offset int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.h {
		if h.ok && h.seg == seg && h.offset == offset {
			return h.pos, true
		}
	}
	return 0, false
}

// put records that a read from offset ended before next, at pos. It
// replaces the hint that read started from, if any: that consumer has
// moved on.
func (r *readHints) put(seg, from, next, pos int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, h := range r.h {
		if h.ok && h.seg == seg && h.offset == from {
			r.h[i] = readHint{seg, next, pos, true}
			return
		}
	}
	r.h[r.i] = readHint{seg, next, pos, true}
	r.i = (r.i + 1) % len(r.h)
}

// reset forgets all hints: segments were rewritten or removed.
func (r *readHints) reset() {
	r.mu.Lock()
	r.h = [4]readHint{}
	r.mu.Unlock()
}
