package storage

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// CompactStats reports one compaction pass.
type CompactStats struct {
	Segments          int   // sealed segments examined (mapped)
	Rewritten         int   // segments rewritten
	Records           int64 // records read in the examined segments
	Dropped           int64 // records removed: superseded by a later record with the same key
	TombstonesDropped int64 // tombstones removed after DeleteRetention
	BatchesRemoved    int64 // batches that lost every record and went
	BatchesEmptied    int64 // ... and were kept empty, carrying their producer's last sequence
	SegmentsRemoved   int   // sealed segments that lost every batch and went
	// Unreadable counts batches whose records could not be read (stored
	// before records were checked on append, or past a decoding bound
	// since): kept as they are, their keys unmapped.
	Unreadable  int64
	BytesBefore int64 // of the rewritten segments
	BytesAfter  int64
}

// keyHash is a 128-bit hash of a record key: two seeded 64-bit hashes,
// so a collision (which would drop a live record) is negligible.
type keyHash [2]uint64

type keyHasher struct{ a, b maphash.Seed }

func (k keyHasher) sum(key []byte) keyHash {
	return keyHash{maphash.Bytes(k.a, key), maphash.Bytes(k.b, key)}
}

// Compact rewrites the sealed segments of a compacted topic (cleanup
// policy compact) keeping, for each key, only its latest record; records
// without a key are kept. A latest record that is a tombstone (null
// value) is dropped once its timestamp is older than now −
// DeleteRetention. Offsets never change: a batch that loses some records
// keeps its base and last offset and its survivors their offset deltas
// (recompressed with its codec), and gets its survivors' largest
// timestamp as its MaxTimestamp (see rebuiltHeader). A batch that loses
// every record goes, as Kafka's cleaner drops it, leaving a gap in the
// offsets (a read from an offset in a gap gets the next batch, as from
// Kafka) — except the last batch of an idempotent producer still
// remembered, which stays as an empty batch so that its sequence numbers
// survive a rebuild of the producer state from the log. A sealed segment left with no batch is
// deleted, unless it is the first (the log start offset does not move).
// The active segment is never touched.
//
// One pass maps the keys of the newest sealed segments, back to the
// one that takes the map to CompactMaxKeys (always at least one), then
// rewrites every sealed segment that has something to drop. Records of
// keys not in the map are kept, and so are tombstones not known to be
// their key's latest. A pass is skipped when no segment was sealed since
// the last and no tombstone has come of age. Each rewrite is crash-safe: the
// new files are written and fsynced beside the old, then swapped in by
// renames (see the package documentation). Readers are never blocked
// for longer than the pointer swap.
func (l *Log) Compact(now time.Time) (CompactStats, error) {
	var st CompactStats
	if !l.cfg.Cleanup.compacts() {
		return st, nil
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return st, ErrClosed
	}
	if l.failed != nil {
		l.mu.Unlock()
		return st, nil // fenced: Unfence first
	}
	sealed := slices.Clone(l.segs[:len(l.segs)-1])
	activeBase := l.segs[len(l.segs)-1].base
	skip := activeBase == l.compactedTo && now.UnixMilli() < l.tombstoneDue
	lastOfProducer := l.producers.lastOffsets()
	l.mu.Unlock()
	if len(sealed) == 0 || skip {
		return st, nil
	}
	c := &compaction{l: l, hasher: keyHasher{maphash.MakeSeed(), maphash.MakeSeed()},
		latest: map[keyHash]int64{}, tombCut: now.UnixMilli() - l.cfg.DeleteRetention.Milliseconds(), tombDue: 1<<63 - 1,
		lastOfProducer: lastOfProducer}
	if err := c.mapKeys(sealed); err != nil {
		return st, err
	}
	st.Segments = len(sealed)
	for _, s := range sealed {
		if err := c.rewrite(s, &st); err != nil {
			return st, err
		}
	}
	l.mu.Lock()
	l.compactedTo = activeBase
	l.tombstoneDue = c.tombDue
	l.mu.Unlock()
	if st.Rewritten > 0 {
		l.env.logger.Info("storage: compacted", "topic", l.topic, "partition", l.partition, "segments", st.Rewritten,
			"dropped", st.Dropped, "tombstones", st.TombstonesDropped, "before", st.BytesBefore, "after", st.BytesAfter)
	}
	if st.Unreadable > 0 {
		l.env.logger.Warn("storage: compaction kept batches whose records cannot be read as they are", "topic", l.topic,
			"partition", l.partition, "batches", st.Unreadable)
	}
	if st.Rewritten > 0 || st.Unreadable > 0 {
		l.env.hooks.compact(l.topic, l.partition, st)
	}
	return st, nil
}

// compaction is the state of one pass.
type compaction struct {
	l          *Log
	hasher     keyHasher
	latest     map[keyHash]int64 // key → offset of its latest record in the mapped segments
	mappedFrom int               // index of the oldest mapped segment
	tombCut    int64             // tombstones older than this go
	tombDue    int64             // earliest time a kept tombstone becomes droppable
	// lastOfProducer: the last offset of each remembered idempotent
	// producer's last batch, whose header compaction must keep.
	lastOfProducer map[int64]int64
	hdr            kmsg.RecordBatch
	scratch        []byte
	buf            []byte
}

// mapKeys records the latest offset of every key, walking the sealed
// segments from the newest back, and stops after the segment that takes
// the map to CompactMaxKeys (so at least one segment is mapped).
func (c *compaction) mapKeys(segs []*segment) error {
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		err := c.eachBatch(s, func(h *kmsg.RecordBatch) error {
			var err error
			c.scratch, err = forEachRecord(h, c.scratch, func(r *kmsg.Record) bool {
				if r.Key != nil {
					k := c.hasher.sum(r.Key)
					c.latest[k] = max(c.latest[k], h.FirstOffset+int64(r.OffsetDelta))
				}
				return true
			})
			if errors.As(err, new(*BatchError)) {
				return nil // kept whole by rewrite: the keys it maps stay live
			}
			return err
		})
		if err != nil {
			return err
		}
		if len(c.latest) >= c.l.env.compactMaxKeys {
			c.mappedFrom = i
			return nil
		}
	}
	return nil
}

// eachBatch decodes every batch of a sealed segment.
func (c *compaction) eachBatch(s *segment, fn func(h *kmsg.RecordBatch) error) error {
	sc := newScanner(s.log, 0, s.size, true, c.buf)
	defer func() { c.buf = sc.buf }()
	for {
		if c.l.isClosed.Load() {
			return ErrClosed
		}
		at, b, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = decodeHeader(b, &c.hdr)
		}
		if err != nil {
			return c.l.corrupt(s, at, err)
		}
		if err := fn(&c.hdr); err != nil {
			return c.l.corrupt(s, at, err)
		}
	}
}

// keep says whether a record survives.
func (c *compaction) keep(h *kmsg.RecordBatch, r *kmsg.Record, st *CompactStats) bool {
	st.Records++
	if r.Key == nil {
		return true
	}
	off := h.FirstOffset + int64(r.OffsetDelta)
	latest, ok := c.latest[c.hasher.sum(r.Key)]
	if ok && latest > off {
		st.Dropped++
		return false
	}
	if r.Value == nil && ok {
		// The latest record of its key, and every older record of the key
		// goes in this pass: the tombstone can go once old enough.
		ts := h.FirstTimestamp + r.TimestampDelta64
		if h.Attributes&attrLogAppendTime != 0 {
			ts = h.MaxTimestamp
		}
		if ts < c.tombCut {
			st.TombstonesDropped++
			return false
		}
		c.tombDue = min(c.tombDue, ts+c.l.cfg.DeleteRetention.Milliseconds())
	}
	return true
}

// rewrite writes the compacted form of s beside it and swaps it in, if
// anything is to be dropped.
func (c *compaction) rewrite(s *segment, st *CompactStats) error {
	l := c.l
	tmp := newSegmentStruct(l.env.fs, filepath.Join(l.dir, segmentName(s.base))+cleanedInfix, s.base)
	f, err := l.env.fs.OpenFile(tmp.path+logSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	tmp.log = f
	w := &segmentWriter{seg: tmp, interval: l.cfg.IndexIntervalBytes}
	changed := false
	var recs []byte
	err = c.eachBatch(s, func(h *kmsg.RecordBatch) error {
		recs = recs[:0]
		kept, total := int32(0), int32(0)
		maxDelta := int64(math.MinInt64)
		before := *st
		var err error
		c.scratch, err = forEachRecord(h, c.scratch, func(r *kmsg.Record) bool {
			total++
			if c.keep(h, r, st) {
				kept++
				maxDelta = max(maxDelta, r.TimestampDelta64)
				recs = appendRecord(recs, r)
			}
			return true
		})
		if errors.As(err, new(*BatchError)) {
			// Its records cannot be read, its frame and CRC are good:
			// kept as it is, so no data goes and the pass goes on.
			*st = before
			st.Unreadable++
			return w.batch(h, nil)
		}
		if err != nil {
			return err
		}
		switch {
		case kept == total:
			return w.batch(h, nil)
		case kept == 0 && h.ProducerID >= 0 && c.lastOfProducer[h.ProducerID] == h.FirstOffset+int64(h.LastOffsetDelta):
			changed = true
			st.BatchesEmptied++
			return w.empty(h)
		case kept == 0:
			changed = true
			st.BatchesRemoved++
			return nil
		}
		changed = true
		nh := rebuiltHeader(h, kept, maxDelta)
		return w.batch(&nh, recs)
	})
	if err != nil || !changed {
		tmp.close()
		removeSegmentFiles(l.env.fs, tmp.path)
		return err
	}
	if tmp.size == 0 {
		tmp.close()
		removeSegmentFiles(l.env.fs, tmp.path)
		removed, err := c.removeEmptied(s)
		if err != nil || removed {
			if removed {
				st.Rewritten++
				st.SegmentsRemoved++
				st.BytesBefore += s.size
			}
			return err
		}
		// The first segment: kept, empty, so the log start stays.
		if tmp, err = c.emptySegment(s); err != nil {
			return err
		}
	}
	if err := c.swap(s, tmp); err != nil {
		removeSegmentFiles(l.env.fs, tmp.path)
		return err
	}
	st.Rewritten++
	st.BytesBefore += s.size
	st.BytesAfter += tmp.size
	return nil
}

// rebuiltHeader is the header of h rebuilt around kept of its records,
// whose largest timestamp delta is maxDelta, as Kafka's cleaner rebuilds
// a batch (MemoryRecords.filterTo feeding the kept records to a new
// MemoryRecordsBuilder): its MaxTimestamp is its kept records' largest
// timestamp, not the original's, which may be a dropped record's and
// would then stand in the segment's largest timestamp and time index
// (ListOffsets' MAX_TIMESTAMP naming a record that is gone, time
// retention keeping the segment for it). A LogAppendTime batch keeps
// its MaxTimestamp: it is every record's timestamp (Kafka passes it on
// as the builder's log append time). FirstTimestamp stays, and so do the
// kept records' timestamp deltas from it, so each record reads back with
// its timestamp; Kafka's builder re-bases them on the first kept
// record's, which changes no record's timestamp.
func rebuiltHeader(h *kmsg.RecordBatch, kept int32, maxDelta int64) kmsg.RecordBatch {
	nh := *h
	nh.NumRecords = kept
	if h.Attributes&attrLogAppendTime == 0 {
		nh.MaxTimestamp = h.FirstTimestamp + maxDelta
	}
	return nh
}

// swap makes the compacted files the segment: fsync them, rename them
// to .swap (the log last: the commit point), rename those over the
// originals, then replace the segment under the locks. Readers of the
// old segment keep its open files, whose data stays valid.
func (c *compaction) swap(old, tmp *segment) error {
	l := c.l
	if err := tmp.writeIndexes(); err != nil {
		tmp.close()
		return err
	}
	tmp.close()
	base := filepath.Join(l.dir, segmentName(old.base))
	for _, step := range [][2]string{{cleanedInfix, swapInfix}, {swapInfix, ""}} {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
			if err := l.env.fs.Rename(base+step[0]+suffix, base+step[1]+suffix); err != nil {
				return err
			}
		}
		if err := l.env.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	ns := newSegmentStruct(l.env.fs, base, old.base)
	ns.next, ns.size, ns.maxTs = tmp.next, tmp.size, tmp.maxTs
	ns.synced.Store(tmp.size)
	ns.checked.Store(tmp.size) // written by this pass from checked batches
	f, err := l.env.fs.OpenFile(base+logSuffix, os.O_RDWR, 0)
	if err != nil {
		return l.failSwap(err)
	}
	ns.log = f
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		ns.close()
		return ErrClosed
	}
	l.segMu.Lock()
	defer l.segMu.Unlock()
	if err := ns.openSealedIndexes(); err != nil {
		ns.close()
		return l.fail(opSwap, err)
	}
	i := slices.Index(l.segs, old)
	l.segs[i] = ns
	l.hints.reset()
	old.close()
	return nil
}

// failSwap: the new files are in place but cannot be opened; the log
// stops taking writes and the next Open recovers from the files.
func (l *Log) failSwap(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fail(opSwap, err)
}

func removeSegmentFiles(fsys vfs.FS, path string) {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		fsys.Remove(path + suffix)
	}
}

// removeEmptied deletes a sealed segment compaction emptied, unless it
// is the first (whose base is the log start offset); removed reports
// whether it went. Readers of it keep its open file; reads of offsets it
// held go on to the next segment.
func (c *compaction) removeEmptied(old *segment) (removed bool, err error) {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	i := slices.Index(l.segs, old)
	if i <= 0 {
		return false, nil
	}
	l.segMu.Lock()
	l.segs = slices.Delete(slices.Clone(l.segs), i, i+1)
	l.hints.reset()
	err = old.remove()
	l.segMu.Unlock()
	if err != nil {
		return true, l.fail(opSwap, err)
	}
	l.env.logger.Info("storage: compaction removed an emptied segment", "topic", l.topic, "partition", l.partition, "base", old.base)
	return true, l.env.fs.SyncDir(l.dir)
}

// emptySegment makes the empty cleaned files that replace an emptied
// first segment.
func (c *compaction) emptySegment(old *segment) (*segment, error) {
	l := c.l
	tmp := newSegmentStruct(l.env.fs, filepath.Join(l.dir, segmentName(old.base))+cleanedInfix, old.base)
	f, err := l.env.fs.OpenFile(tmp.path+logSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	tmp.log = f
	return tmp, nil
}

// segmentWriter writes the batches compaction keeps to a new segment.
type segmentWriter struct {
	seg      *segment
	interval int
	buf      []byte
}

// batch writes h: as it is on disk when records is nil, else rebuilt
// around records (uncompressed; compressed with h's codec).
func (w *segmentWriter) batch(h *kmsg.RecordBatch, records []byte) error {
	var err error
	if records == nil {
		w.buf = h.AppendTo(w.buf[:0])
	} else if w.buf, err = buildBatch(w.buf[:0], h, records); err != nil {
		return err
	}
	return w.write(h.MaxTimestamp, h.LastOffsetDelta)
}

// empty writes h's header with no records: its offsets and its
// producer's ID, epoch and sequence numbers, nothing else (as Kafka's
// cleaner keeps a producer's last batch). It keeps h's MaxTimestamp, as
// Kafka's DefaultRecordBatch.writeEmptyHeader does (the producer's last
// timestamp, which a producer state rebuilt from the log reads), though
// its record is gone; Kafka's segment and time index take it in too.
// FirstTimestamp stays h's where Kafka writes -1: with no record,
// nothing reads it.
func (w *segmentWriter) empty(h *kmsg.RecordBatch) error {
	e := kmsg.RecordBatch{
		FirstOffset: h.FirstOffset, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes: h.Attributes &^ attrCodecMask, LastOffsetDelta: h.LastOffsetDelta,
		FirstTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, FirstSequence: h.FirstSequence,
	}
	var err error
	if w.buf, err = buildBatch(w.buf[:0], &e, nil); err != nil {
		return err
	}
	return w.write(e.MaxTimestamp, e.LastOffsetDelta)
}

func (w *segmentWriter) write(maxTs int64, lastDelta int32) error {
	s := w.seg
	if _, err := s.log.WriteAt(w.buf, s.size); err != nil {
		return err
	}
	p := peek{base: int64(binary.BigEndian.Uint64(w.buf)), size: int64(len(w.buf)), lastDelta: lastDelta}
	s.noteBatch(s.size, p, maxTs, w.interval)
	return nil
}
