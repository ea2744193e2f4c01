package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// File name suffixes of a segment.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	// A compaction writes <base>.cleaned.{log,index,timeindex}, renames
	// them to <base>.swap.*, the log last (the commit point), then over
	// the originals. See doc.go and prepareDir.
	cleanedInfix = ".cleaned"
	swapInfix    = ".swap"
)

// segment is one log file and its two indexes. Its fields are guarded
// by the Log: the structure by segMu, the mutable state by mu, and
// visible is what readers may read without mu.
type segment struct {
	fs    vfs.FS
	base  int64
	path  string // without suffix
	log   vfs.File
	off   index
	times index

	size      int64 // bytes of whole batches
	next      int64 // offset after the last batch (base when empty)
	maxTs     int64 // largest MaxTimestamp, -1 when empty
	rollStart int64 // Unix ms the segment's age counts from
	sinceIdx  int64 // bytes appended since the last offset-index entry
	idxTs     int64 // timestamp of the last time-index entry
	sealed    bool
	// behindAt is how far the log was handed to the kernel to write
	// back (write-behind) under FsyncInterval and FsyncNever; Log.mu.
	behindAt int64
	// synced is the bytes covered by the last completed fdatasync of the
	// log; visible the bytes readers may read: size, or the durable part
	// under FsyncAlways. The group commit advances both holding only
	// Log.ackMu, appends and seals holding Log.mu.
	synced  atomic.Int64
	visible atomic.Int64
	// checked is the prefix of the file whose batches this process has
	// CRC-checked: on append, in recovery, or on a first read. Reads
	// check every batch past it.
	checked atomic.Int64
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// parseSegmentName returns the base offset of a "<20 digits>.log" name.
func parseSegmentName(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(s, 10, 64)
	return base, err == nil && base >= 0
}

// newSegmentStruct is a segment with nothing read or written yet.
func newSegmentStruct(fsys vfs.FS, path string, base int64) *segment {
	s := &segment{fs: fsys, base: base, path: path, next: base, maxTs: -1, idxTs: -1}
	s.off.entryLen, s.times.entryLen = offEntryLen, timeEntryLen
	return s
}

// newSegment creates an empty active segment started at nowMs.
func newSegment(fsys vfs.FS, dir string, base, nowMs int64) (*segment, error) {
	s := newSegmentStruct(fsys, filepath.Join(dir, segmentName(base)), base)
	s.rollStart = nowMs
	f, err := fsys.OpenFile(s.path+logSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s.log = f
	// Stale indexes of an earlier segment with the same base must not
	// survive.
	fsys.Remove(s.path + indexSuffix)
	fsys.Remove(s.path + timeIndexSuffix)
	return s, nil
}

// noteBatch records a batch just written at position pos in the
// in-memory indexes: an offset-index entry when IndexIntervalBytes have
// passed since the last, with a time-index entry when the largest
// timestamp before it grew.
func (s *segment) noteBatch(pos int64, p peek, maxTs int64, interval int) {
	if pos > 0 && s.sinceIdx >= int64(interval) {
		rel := uint32(p.base - s.base)
		s.off.add(offEntry{rel, uint32(pos)}.encode(nil))
		if s.maxTs > s.idxTs {
			s.times.add(timeEntry{s.maxTs, rel, uint32(pos)}.encode(nil))
			s.idxTs = s.maxTs
		}
		s.sinceIdx = 0
	}
	s.sinceIdx += p.size
	s.size = pos + p.size
	s.checked.Store(s.size)
	s.next = p.last() + 1
	s.maxTs = max(s.maxTs, maxTs)
}

// sealEntry is the time-index entry that closes the segment as it is.
func (s *segment) sealEntry() []byte {
	return timeEntry{s.maxTs, uint32(s.next - s.base), uint32(s.size)}.encode(nil)
}

// writeIndexes fsyncs the log and writes both in-memory indexes to disk
// with the seal entry, fsynced. The segment stays usable for appends.
func (s *segment) writeIndexes() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	s.synced.Store(s.size)
	times := append(s.times.mem[:len(s.times.mem):len(s.times.mem)], s.sealEntry()...)
	for _, w := range []struct {
		suffix string
		b      []byte
	}{{indexSuffix, s.off.mem}, {timeIndexSuffix, times}} {
		if err := vfs.WriteFile(s.fs, s.path+w.suffix, w.b); err != nil {
			return err
		}
	}
	return nil
}

// seal makes the segment read-only: indexes on disk, log fsynced, index
// memory released.
func (s *segment) seal() error {
	if err := s.writeIndexes(); err != nil {
		return err
	}
	return s.openSealedIndexes()
}

// openSealedIndexes switches the indexes from memory to their files.
func (s *segment) openSealedIndexes() error {
	for _, x := range []struct {
		x      *index
		suffix string
	}{{&s.off, indexSuffix}, {&s.times, timeIndexSuffix}} {
		f, err := s.fs.OpenFile(s.path+x.suffix, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return err
		}
		if x.x.f != nil {
			x.x.f.Close()
		}
		x.x.f, x.x.mem, x.x.n = f, nil, int(size)/x.x.entryLen
	}
	s.sealed = true
	s.visible.Store(s.size)
	return nil
}

// noteSynced records that an fdatasync covered the log's first pos
// bytes: neither synced nor visible ever moves back.
func (s *segment) noteSynced(pos int64) {
	storeMax(&s.synced, pos)
	storeMax(&s.visible, pos)
}

// storeMax raises v to x unless it is already at least x.
func storeMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

func (s *segment) close() {
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	for _, x := range []*index{&s.off, &s.times} {
		if x.f != nil {
			x.f.Close()
			x.f = nil
		}
	}
}

// remove closes the segment and deletes its files, the log first so a
// crash in between leaves only orphan indexes (which Open deletes).
func (s *segment) remove() error {
	s.close()
	err := s.fs.Remove(s.path + logSuffix)
	s.fs.Remove(s.path + indexSuffix)
	s.fs.Remove(s.path + timeIndexSuffix)
	return err
}
