package storage

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// env is what every Log of a Store shares.
type env struct {
	fs             vfs.FS
	fsync          FsyncPolicy
	maxProducers   int
	producerExpiry time.Duration
	compactMaxKeys int
	now            func() time.Time
	logger         *slog.Logger
	hooks          hooks
	// sealed, when set, is told (without blocking) that a segment of a
	// compacted partition was sealed, so it can be compacted soon.
	sealed func(*Log)
}

// Log is one partition: a sequence of segments, the last of which (the
// active segment) takes appends. All methods are safe for concurrent
// use. See the package documentation for the files and for what readers
// see before an fsync.
type Log struct {
	topic     string
	partition int32
	dir       string
	cfg       TopicConfig // effective
	env       *env

	// mu serializes writers (Append, roll, retention, compaction,
	// Close) and guards the fields below it. failed, closed and loads
	// are written holding both mu and ackMu, so either lets one read them.
	mu        sync.Mutex
	end       int64
	failed    error  // set by fail: the partition is fenced
	failedOp  string // the step that failed (opWrite, opFsync, ...)
	loads     int    // times load read the partition from disk (Unfence reloads it)
	closed    bool
	producers producers
	hdr       kmsg.RecordBatch // scratch for Append

	// ackMu guards what the group commit reads and moves around an
	// fsync, so that it never waits for an append's write in progress,
	// which holds mu (a trace of the produce benchmark showed it
	// waiting there after ~half of its fsyncs, the disk idle meanwhile).
	// Lock order: mu, then ackMu.
	ackMu     sync.Mutex
	written   written       // where the last completed append left the log
	durable   int64         // every offset below is fsynced
	durableCh chan struct{} // closed when durable advances; made on demand
	updCh     chan struct{} // closed when the high watermark advances; made on demand

	// segMu guards the segment list and the lifetime of segment files:
	// readers hold it shared while they read, writers that change the
	// list (holding mu first) exclusively.
	segMu sync.RWMutex
	segs  []*segment
	// idxMu guards the active segment's in-memory indexes, which
	// appenders grow while readers search them.
	idxMu sync.Mutex

	start    atomic.Int64
	endA     atomic.Int64 // end, for readers
	hwm      atomic.Int64
	isClosed atomic.Bool
	hints    readHints

	// cleanMu serializes retention and compaction, which replace and
	// delete sealed segments; compactedTo (the active segment's base at
	// the last compaction) and tombstoneDue (when a kept tombstone comes
	// of age, Unix ms) let a pass with nothing to do be skipped.
	cleanMu      sync.Mutex
	compactedTo  int64
	tombstoneDue int64

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// written is where an append left the log: its end offset, and the
// active segment with its size then.
type written struct {
	end int64
	seg *segment
	pos int64
}

// AppendResult reports where an appended batch went.
type AppendResult struct {
	// BaseOffset and LastOffset are the offsets of the batch's first and
	// last records. For a duplicate they are those of the original.
	BaseOffset, LastOffset int64
	// LogStartOffset is the partition's log start offset after the append.
	LogStartOffset int64
	// Duplicate: the batch was a retry of one already appended by the
	// same idempotent producer; nothing was written.
	Duplicate bool

	loads int // l.loads at the append, for WaitAppended
}

// Topic returns the partition's topic.
func (l *Log) Topic() string { return l.topic }

// Partition returns the partition number.
func (l *Log) Partition() int32 { return l.partition }

// Config returns the partition's effective topic configuration.
func (l *Log) Config() TopicConfig { return l.cfg }

// StartOffset returns the log start offset: the first offset still
// kept (the base of the oldest segment).
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset returns the log end offset: the offset the next appended
// record will take.
func (l *Log) EndOffset() int64 { return l.endA.Load() }

// HighWatermark returns the offset below which readers see records:
// under FsyncAlways the durable end of the log, otherwise EndOffset.
// Read serves nothing at or above it.
func (l *Log) HighWatermark() int64 { return l.hwm.Load() }

// Updated returns a channel that is closed the next time the high
// watermark advances (or the Log closes): long-polling fetches wait on
// it.
func (l *Log) Updated() <-chan struct{} {
	l.ackMu.Lock()
	defer l.ackMu.Unlock()
	if l.closed {
		return closedChan
	}
	if l.updCh == nil {
		l.updCh = make(chan struct{})
	}
	return l.updCh
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Size returns the bytes of all the partition's segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Append validates batch, one Kafka RecordBatch v2 as a producer sent
// it, assigns it offsets by rewriting its base offset in place (batch
// is modified; the CRC does not cover the base offset), and writes it to
// the active segment. Compressed batches are stored as sent, but for
// what Kafka's LogValidator rewrites too: MaxTimestamp is set to the
// records' largest timestamp and the timestamp type to CreateTime (the
// CRC recomputed) when the producer's header says otherwise.
//
// A batch from an idempotent producer (producer ID ≥ 0) that repeats one
// of the producer's last five batches is not written: the result has
// the original offsets and Duplicate set. A sequence gap gives
// ErrOutOfOrderSequence, an epoch older than the producer's
// ErrInvalidProducerEpoch.
//
// Append does not wait for the disk: call WaitAppended with the result.
// Under FsyncAlways it starts writing the batch to the device (a hint,
// vfs.WriteBehinder), so that the disk works while the group commit
// waits for its next fsync, which then has less to write. Under the
// other policies it does so once every writeBehindBytes of whole pages
// (RocksDB's bytes_per_sync), so that dirty pages do not pile up until
// the kernel's writeback and a segment roll's fsync has little left to
// write while appends wait for it.
func (l *Log) Append(batch []byte) (AppendResult, error) {
	res, behind, err := l.append(batch)
	if behind != nil {
		behind.WriteBehind(res.behindAt, res.behindLen) // outside l.mu: it may wait for the device's queue
	}
	return res.AppendResult, err
}

// writeBehindBytes is how many bytes of whole pages accumulate before
// Append hands them to the kernel to write back under FsyncInterval and
// FsyncNever (each batch at once under FsyncAlways).
const writeBehindBytes = 1 << 20

// writeBehindPage is the page size write-behind ranges end on under
// FsyncInterval and FsyncNever, so that a page is not written back
// while later batches still fill it.
const writeBehindPage = 4 << 10

// appended is append's result and the range of the segment file to
// hint for write-behind (behindLen 0: none).
type appended struct {
	AppendResult
	behindAt, behindLen int64
}

func (l *Log) append(batch []byte) (appended, vfs.WriteBehinder, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return appended{}, nil, err
	}
	h := &l.hdr
	if err := checkProduced(batch, h, l.cfg.MaxBatchBytes, l.cfg.Cleanup.compacts()); err != nil {
		return appended{}, nil, err
	}
	now := l.env.now()
	if dup, err := l.producers.check(h, now); err != nil || dup != nil {
		if dup != nil {
			return appended{AppendResult: AppendResult{BaseOffset: dup.first, LastOffset: dup.last, LogStartOffset: l.start.Load(), Duplicate: true, loads: l.loads}}, nil, nil
		}
		return appended{}, nil, err
	}
	seg := l.segs[len(l.segs)-1]
	if l.shouldRoll(seg, len(batch), h.LastOffsetDelta, now) {
		if err := l.roll(); err != nil {
			return appended{}, nil, l.fail(opRoll, err)
		}
		seg = l.segs[len(l.segs)-1]
	}
	base := l.end
	setBaseOffset(batch, base)
	pos := seg.size
	if _, err := seg.log.WriteAt(batch, pos); err != nil {
		return appended{}, nil, l.fail(opWrite, err)
	}
	p := peek{base: base, size: int64(len(batch)), lastDelta: h.LastOffsetDelta}
	l.idxMu.Lock()
	seg.noteBatch(pos, p, h.MaxTimestamp, l.cfg.IndexIntervalBytes)
	l.idxMu.Unlock()
	l.end = p.last() + 1
	l.endA.Store(l.end)
	l.producers.record(h, base, l.end-1, now, l.env.hooks, l.topic, l.partition)
	always := l.env.fsync == FsyncAlways
	l.ackMu.Lock()
	l.written = written{end: l.end, seg: seg, pos: seg.size}
	if !always { // else the group commit moves both once it fsynced
		seg.visible.Store(seg.size)
		l.publishHWM(l.end)
	}
	l.ackMu.Unlock()
	res := appended{AppendResult: AppendResult{BaseOffset: base, LastOffset: l.end - 1, LogStartOffset: l.start.Load(), loads: l.loads}}
	if always {
		select {
		case l.kick <- struct{}{}:
		default:
		}
		res.behindAt, res.behindLen = pos, int64(len(batch))
	} else if end := seg.size &^ (writeBehindPage - 1); end-seg.behindAt >= writeBehindBytes {
		res.behindAt, res.behindLen = seg.behindAt, end-seg.behindAt
		seg.behindAt = end
	}
	var behind vfs.WriteBehinder
	if res.behindLen > 0 {
		behind, _ = seg.log.(vfs.WriteBehinder)
	}
	l.env.hooks.append(l.topic, l.partition, int(h.NumRecords), len(batch))
	return res, behind, nil
}

func (l *Log) writable() error {
	switch {
	case l.closed:
		return ErrClosed
	case l.failed != nil:
		return l.failed
	}
	return nil
}

// shouldRoll says whether the batch must go to a new segment: the
// active one is not empty and the batch would take it past
// SegmentBytes, it was started more than SegmentAge ago, or the
// batch's offsets would not fit the index's 32-bit relative offsets.
func (l *Log) shouldRoll(seg *segment, n int, lastDelta int32, now time.Time) bool {
	if seg.size == 0 {
		return false
	}
	return seg.size+int64(n) > l.cfg.SegmentBytes ||
		l.cfg.SegmentAge > 0 && now.UnixMilli()-seg.rollStart >= l.cfg.SegmentAge.Milliseconds() ||
		l.end+int64(lastDelta)-seg.base >= 1<<32-1
}

// roll seals the active segment and starts a new one at the log end.
// The sealed segment is fsynced, so the recovery point moves to the end.
func (l *Log) roll() error {
	old := l.segs[len(l.segs)-1]
	if err := old.writeIndexes(); err != nil {
		return err
	}
	seg, err := newSegment(l.env.fs, l.dir, l.end, l.env.now().UnixMilli())
	if err != nil {
		return err
	}
	if err := l.env.fs.SyncDir(l.dir); err != nil {
		seg.remove()
		return err
	}
	l.segMu.Lock()
	err = old.openSealedIndexes()
	if err == nil {
		l.segs = append(l.segs, seg)
	}
	l.segMu.Unlock()
	if err != nil {
		seg.remove()
		return err
	}
	l.ackMu.Lock()
	l.markDurable(old.next)
	l.ackMu.Unlock()
	if err := l.checkpoint(); err != nil {
		return err
	}
	if l.cfg.Cleanup.compacts() && l.env.sealed != nil {
		l.env.sealed(l)
	}
	return nil
}

// checkpoint records that everything before the active segment is
// durable: the recovery point, and the producer state up to it.
func (l *Log) checkpoint() error {
	rp := l.segs[len(l.segs)-1].base
	if err := l.producers.snapshot(l.env.fs, l.dir, rp); err != nil {
		return err
	}
	return writeRecoveryPoint(l.env.fs, l.dir, rp)
}

// checkpointEnd fsyncs the active segment, writes its indexes and
// records the whole log as recovered: the recovery point and the
// producer state at the log end, so the next Open verifies nothing.
func (l *Log) checkpointEnd() error {
	if err := l.segs[len(l.segs)-1].writeIndexes(); err != nil {
		return err
	}
	if err := l.producers.snapshot(l.env.fs, l.dir, l.end); err != nil {
		return err
	}
	return writeRecoveryPoint(l.env.fs, l.dir, l.end)
}

// markDurable records that every offset below off is on disk. l.ackMu
// is held.
func (l *Log) markDurable(off int64) {
	if off <= l.durable {
		return
	}
	l.durable = off
	if l.durableCh != nil {
		close(l.durableCh)
		l.durableCh = nil
	}
	if l.env.fsync == FsyncAlways {
		l.publishHWM(off)
	}
}

// publishHWM makes offsets below off visible to readers. l.ackMu is
// held.
func (l *Log) publishHWM(off int64) {
	l.hwm.Store(off)
	if l.updCh != nil {
		close(l.updCh)
		l.updCh = nil
	}
}

// fail fences the log: nothing more is acknowledged until Unfence.
// l.mu is held.
func (l *Log) fail(op string, err error) error {
	if l.failed == nil {
		l.ackMu.Lock()
		l.failed, l.failedOp = fmt.Errorf("%w: %s %s/%d: %v", ErrLogFailed, op, l.topic, l.partition, err), op
		if l.durableCh != nil {
			close(l.durableCh)
			l.durableCh = nil
		}
		l.ackMu.Unlock()
		l.env.logger.Error("storage: partition failed", "topic", l.topic, "partition", l.partition, "op", op, "err", err)
	}
	return l.failed
}

// Close flushes the active segment and its indexes, writes the recovery
// point and closes the files. Appends and reads after Close return
// ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.ackMu.Lock()
	l.closed = true
	l.ackMu.Unlock()
	l.isClosed.Store(true)
	close(l.done)
	l.mu.Unlock()
	l.wg.Wait()
	l.cleanMu.Lock() // a compaction pass stops at its next batch
	defer l.cleanMu.Unlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.failed == nil {
		err = l.checkpointEnd()
	}
	l.ackMu.Lock()
	if l.failed == nil && err == nil {
		l.markDurable(l.end)
	}
	if l.durableCh != nil {
		close(l.durableCh)
		l.durableCh = nil
	}
	if l.updCh != nil {
		close(l.updCh)
		l.updCh = nil
	}
	l.ackMu.Unlock()
	l.segMu.Lock()
	for _, s := range l.segs {
		s.close()
	}
	l.segMu.Unlock()
	return err
}
