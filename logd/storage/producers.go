package storage

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// producerWindow is how many of a producer's latest batches are
// remembered for duplicate detection: Kafka's
// max.in.flight.requests.per.connection limit for idempotence.
const producerWindow = 5

// seqBatch is one remembered batch of an idempotent producer.
type seqBatch struct {
	firstSeq, lastSeq int32
	first, last       int64 // offsets assigned
}

type producerEntry struct {
	epoch   int16
	lastMs  int64 // Unix ms of the last append, for expiry and eviction
	batches [producerWindow]seqBatch
	n       int // batches held, newest at batches[n-1]
}

// producers is a partition's idempotent-producer state: per producer
// ID, its epoch and its last five batches' sequences and offsets.
// Bounded by MaxProducers; producers idle longer than ProducerExpiry are
// forgotten.
type producers struct {
	m      map[int64]*producerEntry
	max    int
	expiry time.Duration
}

func newProducers(max int, expiry time.Duration) producers {
	return producers{m: make(map[int64]*producerEntry), max: max, expiry: expiry}
}

// seqAdd adds n to a sequence number, wrapping at MaxInt32 to 0 as
// Kafka does.
func seqAdd(seq int32, n int32) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

// check decides what to do with an incoming batch: nil, nil to append
// it; the original batch for a duplicate; or an error.
func (ps *producers) check(h *kmsg.RecordBatch, now time.Time) (*seqBatch, error) {
	if h.ProducerID < 0 {
		return nil, nil
	}
	e := ps.m[h.ProducerID]
	if e == nil || e.lastMs+ps.expiry.Milliseconds() < now.UnixMilli() {
		// Unknown (new, expired or evicted): accept any sequence.
		return nil, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return nil, ErrInvalidProducerEpoch
	case h.ProducerEpoch > e.epoch:
		if h.FirstSequence != 0 {
			return nil, ErrOutOfOrderSequence
		}
		return nil, nil
	}
	last := seqAdd(h.FirstSequence, h.LastOffsetDelta)
	for i := range e.n {
		if b := &e.batches[i]; b.firstSeq == h.FirstSequence && b.lastSeq == last {
			return b, nil
		}
	}
	if e.n > 0 && h.FirstSequence != seqAdd(e.batches[e.n-1].lastSeq, 1) {
		return nil, ErrOutOfOrderSequence
	}
	return nil, nil
}

// record remembers a batch just appended at offsets first..last.
func (ps *producers) record(h *kmsg.RecordBatch, first, last int64, now time.Time, hk hooks, topic string, part int32) {
	if h.ProducerID < 0 {
		return
	}
	ps.add(h.ProducerID, h.ProducerEpoch, seqBatch{h.FirstSequence, seqAdd(h.FirstSequence, h.LastOffsetDelta), first, last}, now.UnixMilli(), hk, topic, part)
}

func (ps *producers) add(id int64, epoch int16, b seqBatch, ms int64, hk hooks, topic string, part int32) {
	e := ps.m[id]
	if e == nil {
		if len(ps.m) >= ps.max {
			ps.evictOldest(hk, topic, part)
		}
		e = &producerEntry{epoch: epoch}
		ps.m[id] = e
	}
	if epoch != e.epoch {
		e.epoch, e.n = epoch, 0
	}
	if e.n == producerWindow {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = b
	e.n++
	e.lastMs = max(e.lastMs, ms)
}

func (ps *producers) evictOldest(hk hooks, topic string, part int32) {
	var oldest int64
	oldestMs := int64(math.MaxInt64)
	for id, e := range ps.m {
		if e.lastMs < oldestMs {
			oldest, oldestMs = id, e.lastMs
		}
	}
	delete(ps.m, oldest)
	hk.producerEvict(topic, part, oldest)
}

// lastOffsets returns, per remembered producer, the last offset of its
// latest batch.
func (ps *producers) lastOffsets() map[int64]int64 {
	m := make(map[int64]int64, len(ps.m))
	for id, e := range ps.m {
		if e.n > 0 {
			m[id] = e.batches[e.n-1].last
		}
	}
	return m
}

// expire forgets producers idle for longer than the expiry.
func (ps *producers) expire(now time.Time) {
	cut := now.UnixMilli() - ps.expiry.Milliseconds()
	for id, e := range ps.m {
		if e.lastMs < cut {
			delete(ps.m, id)
		}
	}
}

// replay rebuilds state from a stored batch header during recovery, at
// time now. A batch does not record when it was appended: its
// MaxTimestamp is the producer's clock (a replay of old events, a
// producer with a wrong clock), so taking it for the append time could
// expire at once a producer that appended just before the crash, and
// let a retry it queued behind a lost request be appended twice. So a
// replayed producer counts as active at recovery: it is kept for one
// expiry from then, unless its timestamps are later still.
func (ps *producers) replay(h storedHeader, now time.Time) {
	if h.producerID < 0 {
		return
	}
	b := seqBatch{h.firstSeq, seqAdd(h.firstSeq, h.lastDelta), h.base, h.last()}
	ps.add(h.producerID, h.epoch, b, max(h.maxTs, now.UnixMilli()), nil, "", 0)
}

// The producer-state snapshot: written with the recovery point, it holds
// the state as of an offset, so recovery replays only the batches after
// it.
const (
	producerStateFile    = "producer-state"
	producerStateVersion = 1
	producerEntryLen     = 8 + 2 + 8 + 1 + producerWindow*24
)

func (ps *producers) snapshot(fsys vfs.FS, dir string, upTo int64) error {
	b := make([]byte, 0, 13+len(ps.m)*producerEntryLen)
	b = append(b, producerStateVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(upTo))
	b = binary.BigEndian.AppendUint32(b, uint32(len(ps.m)))
	for id, e := range ps.m {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastMs))
		b = append(b, byte(e.n))
		for i := range producerWindow {
			x := e.batches[i]
			b = binary.BigEndian.AppendUint32(b, uint32(x.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(x.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(x.first))
			b = binary.BigEndian.AppendUint64(b, uint64(x.last))
		}
	}
	return writeStateFile(fsys, filepath.Join(dir, producerStateFile), b)
}

// loadSnapshot reads the snapshot; it returns the offset it covers up
// to, or an error (missing, damaged) after which the caller replays the
// whole log.
func (ps *producers) loadSnapshot(fsys vfs.FS, dir string) (int64, error) {
	p, err := readStateFile(fsys, filepath.Join(dir, producerStateFile))
	if err != nil {
		return 0, err
	}
	return ps.decodeSnapshot(p)
}

func (ps *producers) decodeSnapshot(p []byte) (int64, error) {
	bad := corruptFile(producerStateFile, "bad layout")
	if len(p) < 13 || p[0] != producerStateVersion {
		return 0, bad
	}
	upTo := int64(binary.BigEndian.Uint64(p[1:]))
	n := int(binary.BigEndian.Uint32(p[9:]))
	p = p[13:]
	if n > ps.max || len(p) != n*producerEntryLen {
		return 0, bad
	}
	m := make(map[int64]*producerEntry, n)
	for range n {
		e := &producerEntry{
			epoch:  int16(binary.BigEndian.Uint16(p[8:])),
			lastMs: int64(binary.BigEndian.Uint64(p[10:])),
			n:      int(p[18]),
		}
		if e.n > producerWindow {
			return 0, bad
		}
		q := p[19:]
		for i := range producerWindow {
			e.batches[i] = seqBatch{
				int32(binary.BigEndian.Uint32(q)), int32(binary.BigEndian.Uint32(q[4:])),
				int64(binary.BigEndian.Uint64(q[8:])), int64(binary.BigEndian.Uint64(q[16:])),
			}
			q = q[24:]
		}
		m[int64(binary.BigEndian.Uint64(p))] = e
		p = p[producerEntryLen:]
	}
	ps.m = m
	return upTo, nil
}

// expireProducers forgets the partition's idle producers.
func (l *Log) expireProducers(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.producers.expire(now)
}
