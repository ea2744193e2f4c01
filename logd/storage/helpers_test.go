package storage

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rec is one record of a test batch.
type rec struct {
	key, value []byte
	tsDelta    int64
}

// batchSpec describes a test batch.
type batchSpec struct {
	recs     []rec
	codec    int
	ts       int64 // first timestamp, Unix ms
	pid      int64 // -1: not idempotent
	epoch    int16
	firstSeq int32
}

// makeBatch builds a RecordBatch v2 as a producer would send it.
func makeBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	var recs []byte
	maxDelta := int64(0)
	for i, r := range s.recs {
		kr := kmsg.Record{TimestampDelta64: r.tsDelta, OffsetDelta: int32(i), Key: r.key, Value: r.value}
		recs = appendRecord(recs, &kr)
		maxDelta = max(maxDelta, r.tsDelta)
	}
	h := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Attributes:           int16(s.codec),
		LastOffsetDelta:      int32(len(s.recs) - 1),
		FirstTimestamp:       s.ts,
		MaxTimestamp:         s.ts + maxDelta,
		ProducerID:           s.pid,
		ProducerEpoch:        s.epoch,
		FirstSequence:        s.firstSeq,
		NumRecords:           int32(len(s.recs)),
	}
	b, err := buildBatch(nil, &h, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// simpleBatch is n records with values "<tag>-<i>", keys "k<i>", at ts.
func simpleBatch(t testing.TB, tag string, n int, ts int64) []byte {
	s := batchSpec{ts: ts, pid: -1, epoch: -1, firstSeq: -1}
	for i := range n {
		s.recs = append(s.recs, rec{key: fmt.Appendf(nil, "k%d", i), value: fmt.Appendf(nil, "%s-%d", tag, i)})
	}
	return makeBatch(t, s)
}

// decoded is a record read back from the log.
type decoded struct {
	offset int64
	ts     int64
	key    string
	value  []byte // nil for a tombstone
}

// decodeBatches checks and decodes batches as a consumer would.
func decodeBatches(t testing.TB, b []byte) []decoded {
	t.Helper()
	var out []decoded
	for len(b) > 0 {
		p, ok := peekBatch(b)
		if !ok || p.size > int64(len(b)) {
			t.Fatalf("partial batch: %d bytes left", len(b))
		}
		var h kmsg.RecordBatch
		if err := decodeHeader(b[:p.size], &h); err != nil {
			t.Fatalf("batch at offset %d: %v", p.base, err)
		}
		_, err := forEachRecord(&h, nil, func(r *kmsg.Record) bool {
			var v []byte
			if r.Value != nil {
				v = bytes.Clone(r.Value)
			}
			out = append(out, decoded{h.FirstOffset + int64(r.OffsetDelta), h.FirstTimestamp + r.TimestampDelta64, string(r.Key), v})
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		b = b[p.size:]
	}
	return out
}

// testClock is an injected clock tests move by hand.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time      { return c.t }
func (c *testClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *testClock               { return &testClock{time.UnixMilli(1_700_000_000_000)} }
func (c *testClock) ms() int64           { return c.t.UnixMilli() }

// testConfig is a small-segment configuration in a test directory.
func testConfig(t testing.TB, clk *testClock) Config {
	return Config{
		Dir:                 t.TempDir(),
		SegmentBytes:        16 << 10,
		IndexIntervalBytes:  512,
		MaintenanceInterval: -1,
		Now:                 clk.now,
	}
}

func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openPartition opens cfg and returns the Log of topic "t" partition 0,
// creating the topic if needed.
func openPartition(t testing.TB, cfg Config) (*Store, *Log) {
	t.Helper()
	s := mustOpen(t, cfg)
	if err := s.CreateTopic("t", 1, TopicConfig{}); err != nil && !errors.Is(err, ErrTopicExists) {
		t.Fatal(err)
	}
	l, err := s.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

// appendDurable appends a batch and waits for it to be durable.
func appendDurable(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	r, err := l.Append(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitDurable(t.Context(), r.LastOffset); err != nil {
		t.Fatal(err)
	}
	return r
}

// readAll reads every record from offset to the high watermark.
func readAll(t testing.TB, l *Log, from int64) []decoded {
	t.Helper()
	var out []decoded
	for off := from; off < l.HighWatermark(); {
		b, err := l.Read(off, 4096)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(b) == 0 {
			break
		}
		recs := decodeBatches(t, b)
		for _, r := range recs {
			if r.offset >= off {
				out = append(out, r)
			}
		}
		p, _ := peekBatch(b)
		last := p.base
		for rest := b; len(rest) > 0; {
			q, _ := peekBatch(rest)
			last = q.last()
			rest = rest[q.size:]
		}
		off = last + 1
	}
	return out
}

// walkBatches calls fn with every batch of l, in order, from its start
// offset to its end, as reads return them.
func walkBatches(t testing.TB, l *Log, fn func(p peek, h *kmsg.RecordBatch)) {
	t.Helper()
	for off := l.StartOffset(); off < l.EndOffset(); {
		b, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("Read(%d) below the end %d returned nothing", off, l.EndOffset())
		}
		for len(b) > 0 {
			p, _ := peekBatch(b)
			var h kmsg.RecordBatch
			if err := decodeHeader(b[:p.size], &h); err != nil {
				t.Fatalf("batch at %d: %v", p.base, err)
			}
			fn(p, &h)
			off = p.last() + 1
			b = b[p.size:]
		}
	}
}

// fsyncCounter counts the Log's own fsyncs (group commit or interval
// timer), not those of rolls.
type fsyncCounter struct{ n atomic.Int64 }

func (c *fsyncCounter) OnFsync(string, int32, time.Duration, int64) { c.n.Add(1) }

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func removeFile(dir, name string) error { return os.Remove(filepath.Join(dir, name)) }

func newTestLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
