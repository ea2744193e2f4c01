package storage

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// openLog opens the partition in dir, recovering it: a segment is
// trusted as it is only when it lies wholly below the recovery point and
// its indexes pass a sanity check; every other segment is read batch by
// batch (length, magic, CRC-32C, ascending offsets), cut at the first
// batch that fails, and its indexes rebuilt. Segments after a cut are
// deleted. Bad indexes are rebuilt, never a reason to refuse to open.
func openLog(dir, topic string, part int32, cfg TopicConfig, e *env) (*Log, error) {
	l := &Log{
		topic: topic, partition: part, dir: dir, cfg: cfg, env: e,
		kick: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	if e.fsync == FsyncAlways {
		l.wg.Add(1)
		go l.syncLoop()
	}
	return l, nil
}

// load recovers the partition from its directory into l: segments,
// producer state, offsets. Either l is not shared yet, or l.mu and
// l.segMu are held and l has no segments open (Unfence).
func (l *Log) load() error {
	dir, e := l.dir, l.env
	if err := vfs.MkdirAllDurable(e.fs, dir); err != nil {
		return err
	}
	bases, err := prepareDir(dir, e)
	if err != nil {
		return err
	}
	l.ackMu.Lock()
	l.loads++
	l.ackMu.Unlock()
	l.segs = nil
	l.producers = newProducers(e.maxProducers, e.producerExpiry)
	l.compactedTo, l.tombstoneDue = -1, 0
	l.hints.reset()
	rp, err := readRecoveryPoint(e.fs, dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.logger.Warn("storage: recovery point unreadable, verifying every segment", "dir", dir, "err", err)
	}
	r := recovery{l: l, rp: rp}
	for i, base := range bases {
		nextBase := int64(math.MaxInt64)
		if i+1 < len(bases) {
			nextBase = bases[i+1]
		}
		cut, err := r.load(base, nextBase, i == len(bases)-1)
		if err != nil {
			l.closeSegments()
			return err
		}
		if cut {
			for _, b := range bases[i+1:] {
				e.logger.Warn("storage: deleting segment after a truncated one", "dir", dir, "base", b)
				if err := newSegmentStruct(e.fs, filepath.Join(dir, segmentName(b)), b).remove(); err != nil {
					l.closeSegments()
					return err
				}
			}
			break
		}
	}
	if len(l.segs) == 0 {
		s, err := newSegment(e.fs, dir, 0, e.now().UnixMilli())
		if err != nil {
			return err
		}
		if err := e.fs.SyncDir(dir); err != nil {
			s.close()
			return err
		}
		l.segs = append(l.segs, s)
	}
	l.recoverProducers(r.buf)
	l.start.Store(l.segs[0].base)
	active := l.segs[len(l.segs)-1]
	l.end = active.next
	l.ackMu.Lock()
	l.durable = l.end
	l.written = written{end: l.end, seg: active, pos: active.size}
	l.ackMu.Unlock()
	l.endA.Store(l.end)
	l.hwm.Store(l.end)
	return nil
}

// prepareDir finishes or undoes what a crash interrupted and returns
// the segment bases, ascending. A compaction whose <base>.swap.log
// exists was committed: its swap files are renamed over the segment's
// (indexes that are stale are caught by the sanity check and rebuilt).
// Files of an uncommitted compaction (*.cleaned.*, *.swap.* without the
// log), *.tmp files and indexes without a log are deleted.
func prepareDir(dir string, e *env) ([]int64, error) {
	names, err := readDirNames(e.fs, dir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		stem, ok := strings.CutSuffix(n, swapInfix+logSuffix)
		if !ok {
			continue
		}
		p := filepath.Join(dir, stem)
		e.logger.Info("storage: completing an interrupted compaction", "dir", dir, "segment", stem)
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
			if err := e.fs.Rename(p+swapInfix+suffix, p+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if err := e.fs.SyncDir(dir); err != nil {
			return nil, err
		}
	}
	if names, err = readDirNames(e.fs, dir); err != nil {
		return nil, err
	}
	var bases []int64
	logs := map[string]bool{}
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
			logs[strings.TrimSuffix(n, logSuffix)] = true
		}
	}
	for _, n := range names {
		stem, isIdx := strings.CutSuffix(n, indexSuffix)
		if !isIdx {
			stem, isIdx = strings.CutSuffix(n, timeIndexSuffix)
		}
		if strings.Contains(n, cleanedInfix+".") || strings.Contains(n, swapInfix+".") || strings.HasSuffix(n, tmpSuffix) || isIdx && !logs[stem] {
			if err := e.fs.Remove(filepath.Join(dir, n)); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}

func readDirNames(fsys vfs.FS, dir string) ([]string, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, d := range ents {
		if d.Type().IsRegular() {
			names = append(names, d.Name())
		}
	}
	return names, nil
}

// recovery carries state across the segments of one openLog.
type recovery struct {
	l   *Log
	rp  int64
	buf []byte
	hdr kmsg.RecordBatch
}

// load opens one segment, trusted or verified, and appends it to the
// log. cut reports that it was truncated (later segments must go).
func (r *recovery) load(base, nextBase int64, last bool) (cut bool, err error) {
	l := r.l
	path := filepath.Join(l.dir, segmentName(base))
	f, err := l.env.fs.OpenFile(path+logSuffix, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return false, err
	}
	s := newSegmentStruct(l.env.fs, path, base)
	s.log = f
	prevNext := int64(0)
	if n := len(l.segs); n > 0 {
		prevNext = l.segs[n-1].next
	}
	if base >= prevNext && r.trust(s, size, nextBase) {
		if err := s.readRollStart(l.env.now(), l.cfg.SegmentAge); err != nil {
			s.close()
			return false, err
		}
		if !last {
			if err := s.openSealedIndexes(); err != nil {
				s.close()
				return false, err
			}
		}
		l.segs = append(l.segs, s)
		return false, nil
	}
	cut, err = r.verify(s, size, max(base, prevNext), nextBase, last)
	if err != nil {
		s.close()
		return false, err
	}
	l.segs = append(l.segs, s)
	if !last && !cut {
		if err := s.seal(); err != nil {
			return false, err
		}
	}
	return cut, nil
}

// trust loads a segment's indexes from disk when the segment lies below
// the recovery point and the indexes are sound: entries ordered and in
// range, and the time index's seal entry matching the log's size.
func (r *recovery) trust(s *segment, size, nextBase int64) bool {
	times, err := readIndexFile(s.fs, s.path+timeIndexSuffix, timeEntryLen, size, math.MaxUint32)
	if err != nil || len(times) == 0 {
		return false
	}
	seal := decodeTime(times[len(times)-timeEntryLen:])
	next := s.base + int64(seal.rel)
	if int64(seal.pos) != size || next > nextBase || next > r.rp {
		return false
	}
	off, err := readIndexFile(s.fs, s.path+indexSuffix, offEntryLen, size, seal.rel)
	if err != nil {
		return false
	}
	s.size, s.next, s.maxTs = size, next, seal.ts
	s.synced.Store(size)
	s.visible.Store(size)
	s.off.mem, s.off.n = off, len(off)/offEntryLen
	s.times.mem, s.times.n = times[:len(times)-timeEntryLen], len(times)/timeEntryLen-1
	s.sinceIdx = size
	if s.off.n > 0 {
		s.sinceIdx = size - int64(decodeOff(off[len(off)-offEntryLen:]).pos)
	}
	if s.times.n > 0 {
		s.idxTs = decodeTime(s.times.mem[len(s.times.mem)-timeEntryLen:]).ts
	}
	return true
}

// readRollStart starts the roll clock of a reopened segment at its
// first batch's MaxTimestamp, but no earlier than one SegmentAge ago: a
// segment of old timestamps rolls at the next append, not at every one.
func (s *segment) readRollStart(now time.Time, age time.Duration) error {
	s.rollStart = now.UnixMilli()
	if s.size == 0 {
		return nil
	}
	var b [batchHeaderLen]byte
	if _, err := s.log.ReadAt(b[:], 0); err != nil {
		return err
	}
	s.rollStart = min(s.rollStart, max(readStoredHeader(b[:]).maxTs, now.Add(-age).UnixMilli()))
	return nil
}

// verify reads every batch of the segment, rebuilding its indexes, and
// truncates it at the first batch that is torn, fails its CRC, starts
// before the end of the one before (the first before expect), or
// reaches nextBase. In the last segment, which compaction never touches,
// each batch must start right after the one before; in the others
// compaction may have left gaps. The segment is fsynced, so what
// survives is durable.
func (r *recovery) verify(s *segment, size, expect, nextBase int64, last bool) (cut bool, err error) {
	l := r.l
	sc := newScanner(s.log, 0, size, true, r.buf)
	var reason string
	for {
		pos, b, err := sc.next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = decodeHeader(b, &r.hdr)
		}
		if err == nil && (r.hdr.FirstOffset < expect || last && r.hdr.FirstOffset != expect ||
			r.hdr.FirstOffset+int64(r.hdr.LastOffsetDelta) >= nextBase) {
			err = errOffsetOrder
		}
		if err != nil {
			if _, ok := err.(*BatchError); !ok && err != errTorn {
				return false, err
			}
			reason = err.Error()
			break
		}
		p := peek{base: r.hdr.FirstOffset, size: int64(len(b)), lastDelta: r.hdr.LastOffsetDelta}
		s.noteBatch(pos, p, r.hdr.MaxTimestamp, l.cfg.IndexIntervalBytes)
		expect = s.next
	}
	r.buf = sc.buf
	if s.size < size {
		cut = true
		l.env.logger.Warn("storage: truncating a torn or corrupt segment tail", "topic", l.topic, "partition", l.partition,
			"segment", s.base, "at", s.size, "dropped", size-s.size, "reason", reason)
		l.env.hooks.truncate(l.topic, l.partition, s.next, size-s.size, reason)
		if err := s.log.Truncate(s.size); err != nil {
			return false, err
		}
	}
	s.visible.Store(s.size)
	if err := s.log.Sync(); err != nil {
		return cut, err
	}
	s.synced.Store(s.size)
	return cut, nil
}

// recoverProducers rebuilds the idempotent-producer state: the snapshot,
// then the headers of every batch after the offset it covers. Without a
// usable snapshot the whole log is replayed.
func (l *Log) recoverProducers(buf []byte) {
	start, end := l.segs[0].base, l.segs[len(l.segs)-1].next
	from, err := l.producers.loadSnapshot(l.env.fs, l.dir)
	if err != nil || from < start || from > end {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.env.logger.Warn("storage: producer state unreadable, replaying the log", "dir", l.dir, "err", err)
		}
		l.producers = newProducers(l.env.maxProducers, l.env.producerExpiry)
		from = start
	}
	now := l.env.now()
	for _, s := range l.segs {
		if s.next <= from {
			continue
		}
		sc := newScanner(s.log, 0, s.size, false, buf)
		for {
			at, b, err := sc.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				// Damage below the recovery point: Read refuses those
				// batches; the producers in them are forgotten.
				l.env.logger.Warn("storage: unreadable batch while rebuilding producer state", "topic", l.topic,
					"partition", l.partition, "segment", s.base, "position", at, "err", err)
				break
			}
			if h := readStoredHeader(b); h.base >= from {
				l.producers.replay(h, now)
			}
		}
		buf = sc.buf
	}
}

// closeSegments closes the files of a log that failed to open (or is
// being reloaded) and forgets its segments.
func (l *Log) closeSegments() {
	for _, s := range l.segs {
		s.close()
	}
	l.segs = nil
}
