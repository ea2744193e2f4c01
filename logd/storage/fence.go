package storage

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Failure ops: the step of the log that failed (Log.failedOp).
const (
	opWrite = "write" // a batch's write: the batches before it are intact
	opFsync = "fsync" // an fdatasync: the page cache past the last good one is suspect
	opRoll  = "roll"
	opSwap  = "compaction swap"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Fenced reports whether the partition is fenced: a write or fsync to
// its files failed (a full disk, an I/O error), so it answers every
// write at once with ErrLogFailed until Unfence recovers it. Reads go on.
func (l *Log) Fenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed != nil
}

// Unfence recovers a fenced partition without a restart, once the cause
// has gone (space was freed). It cuts the active segment back to what
// the last completed fdatasync covered — after a failed fsync the page
// cache past that point cannot be trusted — except that when only a
// write failed, the whole batches written before it are fsynced and
// kept. Segment files a failed roll left after the active one are
// deleted. Then it reloads the partition from disk as Open does (CRC
// checks past the recovery point, indexes, producer state), writes a
// checkpoint as Close does (which a disk still full refuses), and takes
// writes again. If any step fails the partition stays fenced and the
// error (wrapping ErrLogFailed) says why; it is safe to retry.
//
// Nothing acknowledged under FsyncAlways is lost (acknowledged means
// fsynced); under FsyncInterval and FsyncNever at most what a power loss
// at that moment could have taken. Readers that had read past the new
// end get OFFSET_OUT_OF_RANGE, as after such a power loss.
// Store.Maintain calls Unfence on every fenced partition.
func (l *Log) Unfence() error {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case l.failed == nil:
		return nil
	}
	l.segMu.Lock()
	defer l.segMu.Unlock()
	if err := l.cutToSynced(); err != nil {
		return l.stillFenced("cut", err)
	}
	l.closeSegments()
	if err := l.load(); err != nil {
		return l.stillFenced("reload", err)
	}
	// The checkpoint is also the probe: it writes and fsyncs a few
	// files, which a disk still full or failing refuses.
	if err := l.checkpointEnd(); err != nil {
		return l.stillFenced("checkpoint", err)
	}
	l.env.logger.Info("storage: partition unfenced", "topic", l.topic, "partition", l.partition,
		"after", l.failedOp, "end", l.end, "was", l.failed)
	l.ackMu.Lock()
	l.failed, l.failedOp = nil, ""
	l.publishHWM(l.end)
	l.ackMu.Unlock()
	return nil
}

// cutToSynced truncates the active segment to what is known to be on
// disk and deletes segment files after it. l.mu and l.segMu are held.
func (l *Log) cutToSynced() error {
	if len(l.segs) == 0 {
		return nil // an earlier Unfence cut, then failed to reload
	}
	active := l.segs[len(l.segs)-1]
	if active.log == nil {
		return nil
	}
	keep := active.synced.Load()
	if l.failedOp == opWrite && active.size > keep {
		if err := active.log.Truncate(active.size); err != nil {
			return err
		}
		if err := active.log.Sync(); err != nil {
			l.failedOp = opFsync // from now on the cache is suspect
			return err
		}
		active.synced.Store(active.size)
		keep = active.size
	}
	if err := active.log.Truncate(keep); err != nil {
		return err
	}
	if err := active.log.Sync(); err != nil {
		l.failedOp = opFsync
		return err
	}
	names, err := readDirNames(l.env.fs, l.dir)
	if err != nil {
		return err
	}
	removed := false
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok && b > active.base {
			l.env.logger.Warn("storage: deleting a segment a failed roll left", "topic", l.topic, "partition", l.partition, "base", b)
			if err := newSegmentStruct(l.env.fs, filepath.Join(l.dir, strings.TrimSuffix(n, logSuffix)), b).remove(); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		return l.env.fs.SyncDir(l.dir)
	}
	return nil
}

func (l *Log) stillFenced(step string, err error) error {
	l.env.logger.Warn("storage: partition still fenced", "topic", l.topic, "partition", l.partition, "step", step, "err", err)
	return fmt.Errorf("%w: unfencing %s/%d: %s: %v", ErrLogFailed, l.topic, l.partition, step, err)
}

// Fenced returns the fenced partitions (see Log.Fenced), sorted; none
// when every partition takes writes. A health check reports not-ready
// while it is not empty.
func (s *Store) Fenced() []TopicPartition {
	var out []TopicPartition
	for _, l := range s.logs() {
		if l.Fenced() {
			out = append(out, TopicPartition{l.topic, l.partition})
		}
	}
	slices.SortFunc(out, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
