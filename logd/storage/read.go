package storage

import (
	"errors"
	"fmt"
	"os"
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
	dst, _, _, err := l.read(dst, offset, maxBytes, false)
	return dst, err
}

// ReadAppendLeft is ReadAppend also returning left, the size of the
// batch that followed the read in its segment and was left out for
// maxBytes: 0 when none was (the read ended at its segment's end, at
// the high watermark, or at a batch that fails its checks: a larger
// maxBytes would have read no more), -1 when one was but its header
// was not read.
func (l *Log) ReadAppendLeft(dst []byte, offset int64, maxBytes int) ([]byte, int64, error) {
	dst, _, left, err := l.read(dst, offset, maxBytes, false)
	return dst, left, err
}

// A Region is a range of a segment file that holds whole record
// batches, every one of which has passed its checks in this process, so
// it can be sent as it is on disk (sendfile). File is a descriptor of
// its own, valid whatever happens to the segment; the receiver of a
// Region closes it.
type Region struct {
	File *os.File
	Off  int64
	Len  int
}

// ReadRegion returns what ReadAppend would append, as a Region when it
// can: when those batches have all been checked already and the
// segment's file can be sent from (vfs.Duper). Otherwise it appends
// them to dst, as ReadAppend does, checking those not yet checked, and
// returns a Region with no File.
//
// A Region ends at an offset-index entry or at the end of what is
// visible, so it may stop up to IndexIntervalBytes short of maxBytes.
func (l *Log) ReadRegion(dst []byte, offset int64, maxBytes int) ([]byte, Region, error) {
	dst, r, _, err := l.read(dst, offset, maxBytes, true)
	return dst, r, err
}

// read is ReadAppend or ReadRegion; left is ReadAppendLeft's (0 for a
// Region).
func (l *Log) read(dst []byte, offset int64, maxBytes int, region bool) ([]byte, Region, int64, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if l.isClosed.Load() {
		return dst, Region{}, 0, ErrClosed
	}
	if offset < l.start.Load() || offset > l.endA.Load() {
		return dst, Region{}, 0, ErrOffsetOutOfRange
	}
	if offset >= l.hwm.Load() {
		return dst, Region{}, 0, nil
	}
	i := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })-1, 0)
	for ; i < len(l.segs); i++ {
		s := l.segs[i]
		limit := s.visible.Load()
		pos, found, err := l.locate(s, offset, limit)
		if err != nil {
			return dst, Region{}, 0, err
		}
		if !found {
			continue
		}
		if region {
			if r, ok, err := l.region(s, pos, limit, offset, maxBytes); err != nil || ok {
				return dst, r, 0, err
			}
		}
		dst, left, err := l.readAt(dst, s, pos, limit, offset, maxBytes)
		return dst, Region{}, left, err
	}
	return dst, Region{}, 0, nil
}

// region returns the batches from pos as a Region when they can be sent
// from s's file as they are: the batches readAt would return (the first
// whole, then those that fit in maxBytes), all below s.checked, so they
// need no check. It walks batch headers only, from the last
// offset-index entry at or before where maxBytes ends. It returns false
// when those batches are not all checked, or s's file cannot be sent
// from (readAt then reads and checks them).
//
// It gives no readahead hint: sendfile's reads are sequential, and the
// kernel's own readahead (its window is the device's read_ahead_kb)
// serves them better than a WILLNEED for the next fetch, which breaks
// that window up (measured: BenchmarkReplay1KiB).
func (l *Log) region(s *segment, pos, limit, offset int64, maxBytes int) (Region, bool, error) {
	d, ok := s.log.(vfs.Duper)
	checked := s.checked.Load()
	if !ok || checked <= pos {
		return Region{}, false, nil
	}
	target := pos + min(limit-pos, int64(max(maxBytes, batchPeekLen)))
	from, next := pos, int64(-1) // next: the base offset of the batch at from, when from > pos
	if target-pos > locateBufBytes {
		var x index
		if s.sealed {
			x = s.off
		} else {
			l.idxMu.Lock()
			x = s.off
			l.idxMu.Unlock()
		}
		i, err := x.search(func(e []byte) bool { return int64(decodeOff(e).pos) <= target })
		if err != nil {
			return Region{}, false, err
		}
		if i > 0 {
			var buf [offEntryLen]byte
			b, err := x.entry(i-1, buf[:])
			if err != nil {
				return Region{}, false, err
			}
			if e := decodeOff(b); int64(e.pos) > pos {
				from, next = int64(e.pos), s.base+int64(e.rel)
			}
		}
	}
	bp := scanBufs.Get().(*[]byte)
	defer scanBufs.Put(bp)
	// The scan's limit is target, not limit: a batch that does not fit
	// ends the walk (errTorn), except the first, which goes whole.
	sc := newScanner(s.log, from, max(target, min(limit, from+batchHeaderLen)), false, (*bp)[:0])
	end := from
	for {
		at, b, err := sc.next()
		if err != nil {
			if at == pos && errors.Is(err, errTorn) && at+batchHeaderLen <= limit {
				// The first batch is larger than maxBytes: it goes whole.
				if b, err = sc.window(at, batchHeaderLen); err == nil {
					p, _ := peekBatch(b)
					end, next = at+p.size, p.last()+1
				}
			}
			break
		}
		p, _ := peekBatch(b)
		end, next = at+p.size, p.last()+1
	}
	if end <= pos || end > limit || end > checked {
		return Region{}, false, nil
	}
	f, err := d.Dup()
	if err != nil {
		return Region{}, false, nil // read instead
	}
	l.hints.put(s.base, offset, next, end)
	return Region{File: f, Off: pos, Len: int(end - pos)}, true, nil
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
// left is the size of the batch after them left out for maxBytes (see
// ReadAppendLeft).
func (l *Log) readAt(dst []byte, s *segment, pos, limit, offset int64, maxBytes int) (_ []byte, left int64, _ error) {
	n := min(limit-pos, int64(max(maxBytes, batchPeekLen)))
	start := len(dst)
	dst = grow(dst, int(n))
	if _, err := s.log.ReadAt(dst[start:start+int(n)], pos); err != nil {
		return dst[:start], 0, err
	}
	first, _ := peekBatch(dst[start:])
	if first.size < batchHeaderLen || pos+first.size > limit {
		return dst[:start], 0, l.corrupt(s, pos, errLength)
	}
	if first.size > n {
		// The first batch is larger than maxBytes: it is returned whole.
		have := n
		n = first.size
		dst = grow(dst[:start+int(have)], int(n-have))
		if _, err := s.log.ReadAt(dst[start+int(have):start+int(n)], pos+have); err != nil {
			return dst[:start], 0, err
		}
	}
	b := dst[start : start+int(n)]
	var used int64
	prev := offset - 1
	checked := s.checked.Load()
	bounded := n < limit-pos // by maxBytes: batches of the segment may be left out
	if bounded {
		left = -1 // the next header not read
	}
	for used+batchPeekLen <= n {
		p, _ := peekBatch(b[used:])
		if p.size < batchHeaderLen {
			left = 0 // a torn or corrupt batch: no more to read
			break
		}
		if used+p.size > n {
			if bounded {
				left = p.size
			}
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
				return dst[:start], 0, l.corrupt(s, pos, err)
			}
			l.corrupt(s, pos+used, err)
			left = 0
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
	return dst[:start+int(used)], left, nil
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
