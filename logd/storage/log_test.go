package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendReadRoundTrip(t *testing.T) {
	codecs := []struct {
		name  string
		codec int
	}{{"none", codecNone}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"lz4", codecLZ4}, {"zstd", codecZstd}}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			s, l := openPartition(t, testConfig(t, clk))
			defer s.Close()
			var want []decoded
			for i := range 50 {
				spec := batchSpec{ts: clk.ms() + int64(i), pid: -1, epoch: -1, firstSeq: -1, codec: c.codec}
				for j := range 1 + i%7 {
					spec.recs = append(spec.recs, rec{key: fmt.Appendf(nil, "k%d", j), value: fmt.Appendf(nil, "v%d-%d", i, j), tsDelta: int64(j)})
				}
				res := appendDurable(t, l, makeBatch(t, spec))
				if res.BaseOffset != l.EndOffset()-int64(len(spec.recs)) || res.LastOffset != l.EndOffset()-1 || res.Duplicate {
					t.Fatalf("batch %d: result %+v, end %d", i, res, l.EndOffset())
				}
				for j, r := range spec.recs {
					want = append(want, decoded{res.BaseOffset + int64(j), spec.ts + r.tsDelta, string(r.key), r.value})
				}
			}
			got := readAll(t, l, 0)
			checkRecords(t, got, want)
			// Read at every offset returns the batch holding it first.
			for off := int64(0); off < l.EndOffset(); off++ {
				b, err := l.Read(off, 1)
				if err != nil {
					t.Fatal(err)
				}
				p, _ := peekBatch(b)
				if p.base > off || p.last() < off || p.size != int64(len(b)) {
					t.Fatalf("Read(%d, 1) gave batch %d..%d of %d bytes (len %d)", off, p.base, p.last(), p.size, len(b))
				}
			}
		})
	}
}

func checkRecords(t testing.TB, got, want []decoded) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.offset != w.offset || g.ts != w.ts || g.key != w.key || string(g.value) != string(w.value) || (g.value == nil) != (w.value == nil) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestReadBounds(t *testing.T) {
	clk := newClock()
	s, l := openPartition(t, testConfig(t, clk))
	defer s.Close()
	for i := range 10 {
		appendDurable(t, l, simpleBatch(t, "b", 3, clk.ms()+int64(i)))
	}
	if _, err := l.Read(31, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	if b, err := l.Read(30, 100); err != nil || len(b) != 0 {
		t.Fatalf("read at end: %d bytes, %v", len(b), err)
	}
	if _, err := l.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	// maxBytes bounds the answer, but one batch always comes whole.
	one := len(simpleBatch(t, "b", 3, 0))
	for _, c := range []struct{ max, batches int }{{0, 1}, {1, 1}, {one, 1}, {one + 1, 1}, {2 * one, 2}, {10 * one, 10}, {1 << 20, 10}} {
		b, err := l.Read(0, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != c.batches*one {
			t.Errorf("Read(0, %d): %d bytes, want %d batches of %d", c.max, len(b), c.batches, one)
		}
	}
}

func TestSegmentRollAndIndex(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.SegmentAge = time.Hour
	s, l := openPartition(t, cfg)
	defer s.Close()
	batch := len(simpleBatch(t, "x", 8, 0))
	perSeg := int(cfg.SegmentBytes) / batch
	for i := range 3 * perSeg {
		appendDurable(t, l, simpleBatch(t, "x", 8, clk.ms()+int64(i)))
	}
	l.mu.Lock()
	segs := len(l.segs)
	for i, sg := range l.segs[:segs-1] {
		if sg.size > cfg.SegmentBytes || sg.size < cfg.SegmentBytes-int64(batch) {
			t.Errorf("segment %d: %d bytes (segment %d, batch %d)", i, sg.size, cfg.SegmentBytes, batch)
		}
		// Sparse: about one entry per IndexIntervalBytes.
		want := int(sg.size) / (cfg.IndexIntervalBytes + batch)
		if sg.off.n < want || sg.off.n > int(sg.size)/cfg.IndexIntervalBytes {
			t.Errorf("segment %d: %d index entries for %d bytes", i, sg.off.n, sg.size)
		}
	}
	l.mu.Unlock()
	if segs != 3 && segs != 4 {
		t.Fatalf("%d segments after %d batches of %d bytes", segs, 3*perSeg, batch)
	}
	for _, sg := range []string{segmentName(0) + logSuffix, segmentName(0) + indexSuffix, segmentName(0) + timeIndexSuffix} {
		if _, err := os.Stat(filepath.Join(l.dir, sg)); err != nil {
			t.Error(err)
		}
	}
	// Age: a segment whose first batch is older than SegmentAge rolls.
	before := segsOf(l)
	clk.add(time.Hour)
	appendDurable(t, l, simpleBatch(t, "y", 1, clk.ms()))
	if segsOf(l) != before+1 {
		t.Fatalf("no roll by age: %d → %d segments", before, segsOf(l))
	}
	appendDurable(t, l, simpleBatch(t, "y", 1, clk.ms()))
	// Old producer timestamps do not make every append roll: age counts
	// from when the segment was started.
	for range 5 {
		appendDurable(t, l, simpleBatch(t, "old", 1, 1))
	}
	if segsOf(l) != before+1 {
		t.Fatalf("rolled a young segment")
	}
	got := readAll(t, l, 0)
	if int64(len(got)) != l.EndOffset() {
		t.Fatalf("read %d records, end %d", len(got), l.EndOffset())
	}
	for i, r := range got {
		if r.offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.offset)
		}
	}
}

func segsOf(l *Log) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segs)
}

func TestOffsetForTime(t *testing.T) {
	clk := newClock()
	for _, codec := range []int{codecNone, codecZstd} {
		s, l := openPartition(t, testConfig(t, clk))
		base := clk.ms()
		// Batch i holds 4 records with timestamps base+10i .. base+10i+3.
		for i := range 200 {
			spec := batchSpec{ts: base + 10*int64(i), pid: -1, epoch: -1, firstSeq: -1, codec: codec}
			for j := range 4 {
				spec.recs = append(spec.recs, rec{value: []byte("v"), tsDelta: int64(j)})
			}
			appendDurable(t, l, makeBatch(t, spec))
		}
		for _, c := range []struct{ ts, off, at int64 }{
			{0, 0, base},
			{base, 0, base},
			{base + 2, 2, base + 2},
			{base + 5, 4, base + 10},
			{base + 1000, 400, base + 1000},
			{base + 1993, 799, base + 1993},
			{base + 1994, -1, -1},
		} {
			off, at, err := l.OffsetForTime(c.ts)
			if err != nil || off != c.off || at != c.at {
				t.Errorf("codec %d: OffsetForTime(base%+d) = %d at %d, %v; want %d at %d", codec, c.ts-base, off, at-base, err, c.off, c.at-base)
			}
		}
		s.Close()
	}
}

func TestAppendRejects(t *testing.T) {
	clk := newClock()
	s, l := openPartition(t, testConfig(t, clk))
	defer s.Close()
	good := simpleBatch(t, "g", 2, clk.ms())
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	reCRC := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[batchCRCPos:], crc32Castagnoli(b[batchCRCStart:]))
		return b
	}
	cases := []struct {
		name  string
		batch []byte
		want  error
	}{
		{"empty", nil, ErrCorruptBatch},
		{"short", good[:60], ErrCorruptBatch},
		{"truncated", good[:len(good)-1], ErrCorruptBatch},
		{"crc", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorruptBatch},
		{"magic", mod(func(b []byte) []byte { b[batchMagicPos] = 1; return b }), ErrInvalidBatch},
		{"count", mod(func(b []byte) []byte { b[batchHeaderLen-1] = 3; return reCRC(b) }), ErrInvalidBatch},
		{"no records", makeBatchRaw(t, 0), ErrInvalidBatch},
		{"transactional", mod(func(b []byte) []byte { b[batchCRCStart+1] |= attrTransactional; return reCRC(b) }), ErrInvalidBatch},
		{"codec", mod(func(b []byte) []byte { b[batchCRCStart+1] |= 7; return reCRC(b) }), ErrInvalidBatch},
		// Kafka's LogValidator.validateBatch: "Invalid sequence number".
		{"negative sequence", makeBatch(t, batchSpec{pid: 7, epoch: 0, firstSeq: -1, recs: []rec{{value: []byte("v")}}}), ErrInvalidBatch},
		{"too large", simpleBatch(t, string(make([]byte, 1<<20)), 1, 0), ErrBatchTooLarge},
	}
	for _, c := range cases {
		if _, err := l.Append(c.batch); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected batches were written: end %d, size %d", l.EndOffset(), l.Size())
	}
	// PartitionLeaderEpoch is never validated.
	b := mod(func(b []byte) []byte { b[12], b[13] = 0x7f, 0x12; return b })
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
}

// makeBatchRaw builds a batch header claiming n records with none.
func makeBatchRaw(t testing.TB, n int32) []byte {
	h := kmsg.RecordBatch{LastOffsetDelta: n - 1, NumRecords: n, ProducerID: -1}
	b, err := buildBatch(nil, &h, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTopics(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	s := mustOpen(t, cfg)
	for _, c := range []struct {
		name  string
		parts int
		want  error
	}{
		{"a", 3, nil}, {"a", 1, ErrTopicExists}, {"", 1, ErrInvalidTopic}, {"..", 1, ErrInvalidTopic},
		{"a/b", 1, ErrInvalidTopic}, {string(make([]byte, 250)), 1, ErrInvalidTopic}, {"b", 0, ErrInvalidPartitions},
		{"c.d_e-F9", 2, nil},
	} {
		if err := s.CreateTopic(c.name, c.parts, TopicConfig{RetentionAge: time.Hour}); !errors.Is(err, c.want) {
			t.Errorf("CreateTopic(%q, %d) = %v, want %v", c.name, c.parts, err, c.want)
		}
	}
	if err := s.CreateTopic("bad", 1, TopicConfig{SegmentBytes: 1}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("bad override: %v", err)
	}
	l, _ := s.Partition("a", 2)
	appendDurable(t, l, simpleBatch(t, "x", 1, clk.ms()))
	if _, err := s.Partition("a", 3); !errors.Is(err, ErrUnknownTopicOrPartition) {
		t.Error(err)
	}
	if err := s.CreateTopic("gone", 2, TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	gone, _ := s.Partition("gone", 1)
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Append(simpleBatch(t, "x", 1, 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("append to a deleted topic: %v", err)
	}
	if _, err := os.Stat(partitionDir(cfg.Dir, "gone", 1)); !os.IsNotExist(err) {
		t.Errorf("deleted partition directory: %v", err)
	}
	s.Close()

	s = mustOpen(t, cfg)
	defer s.Close()
	infos := s.Topics()
	if len(infos) != 2 || infos[0].Name != "a" || infos[0].Partitions != 3 || infos[0].Overrides.RetentionAge != time.Hour ||
		infos[0].Config.RetentionAge != time.Hour || infos[0].Config.SegmentBytes != cfg.SegmentBytes || infos[1].Name != "c.d_e-F9" {
		t.Fatalf("topics after reopen: %+v", infos)
	}
	l, _ = s.Partition("a", 2)
	if l.EndOffset() != 1 {
		t.Fatalf("end offset after reopen: %d", l.EndOffset())
	}
}

// TestOffsetForTimeStreamsCompressedRecords: looking a timestamp up in a
// compressed batch streams its records through a small buffer: a 16 MiB
// record before the one looked for is read past, not kept.
func TestOffsetForTimeStreamsCompressedRecords(t *testing.T) {
	clk := newClock()
	for _, codec := range []int{codecGzip, codecLZ4, codecZstd} {
		s, l := openPartition(t, testConfig(t, clk))
		base := clk.ms()
		appendDurable(t, l, makeBatch(t, batchSpec{ts: base, pid: -1, epoch: -1, firstSeq: -1, codec: codec,
			recs: []rec{{value: make([]byte, 16<<20)}, {value: []byte("v"), tsDelta: 5}}}))
		l.OffsetForTime(base + 5) // warms the pooled decoders (their window: up to 8 MiB)
		// The least of three lookups: TotalAlloc counts the whole
		// process's allocations, and a GC between two lookups empties
		// the decoders' pool (a new decoder's window is a few MiB). A
		// lookup that decompressed the record whole allocates its 16 MiB
		// every time.
		least := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			off, at, err := l.OffsetForTime(base + 5)
			runtime.ReadMemStats(&after)
			if err != nil || off != 1 || at != base+5 {
				t.Errorf("codec %d: OffsetForTime(base+5) = %d at %d, %v; want 1 at base+5", codec, off, at-base, err)
			}
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		if least > 1<<20 && !raceEnabled {
			t.Errorf("codec %d: looking past a 16 MiB record allocated at least %d KiB", codec, least>>10) // was 16-64 MiB
		}
		s.Close()
	}
}

// TestAppendRejectsUndecodableRecords: every record of a produced batch
// is read (decompressed as a stream for a compressed batch), as Kafka's
// LogValidator reads them: a batch whose records do not decode is
// refused, never stored (it once poisoned every compaction pass of its
// partition and every ListOffsets by time).
func TestAppendRejectsUndecodableRecords(t *testing.T) {
	clk := newClock()
	s, l := openPartition(t, testConfig(t, clk))
	defer s.Close()
	// batch builds a batch of n records from a records section,
	// compressed with codec (raw: attributes say codec, records as given).
	batch := func(codec int, raw bool, n int32, recs []byte) []byte {
		h := kmsg.RecordBatch{LastOffsetDelta: n - 1, NumRecords: n, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Attributes: int16(codec)}
		if raw {
			h.Attributes = 0
		}
		b, err := buildBatch(nil, &h, recs)
		if err != nil {
			t.Fatal(err)
		}
		if raw {
			b[batchCRCStart+1] |= byte(codec)
			binary.BigEndian.PutUint32(b[batchCRCPos:], crc32Castagnoli(b[batchCRCStart:]))
		}
		return b
	}
	records := func(rs ...kmsg.Record) []byte {
		var out []byte
		for i := range rs {
			out = appendRecord(out, &rs[i])
		}
		return out
	}
	good := records(kmsg.Record{Key: []byte("k"), Value: []byte("v")}, kmsg.Record{OffsetDelta: 1, Value: []byte("w")})
	oneByteBody := []byte{0x02, 0x00}
	// attributes, timestamp and offset deltas 0, key and value null, one
	// header whose key is null (Kafka: "Invalid negative header key size")
	nullHeaderKey := []byte{0x10, 0, 0, 0, 0x01, 0x01, 0x02, 0x01, 0x01}
	enc, _ := zstd.NewWriter(nil)
	frame := enc.EncodeAll(make([]byte, 1<<20), nil)
	type refusal struct {
		name  string
		batch []byte
		want  error
	}
	cases := []refusal{
		{"record of one byte", batch(codecNone, false, 1, oneByteBody), ErrCorruptBatch},
		{"fewer records than counted", batch(codecNone, false, 3, good), ErrCorruptBatch},
		{"more records than counted", batch(codecNone, false, 1, good), ErrCorruptBatch},
		{"offset deltas", batch(codecNone, false, 2, records(kmsg.Record{Value: []byte("v")}, kmsg.Record{Value: []byte("w")})), ErrInvalidBatch},
		{"gzip that is not", batch(codecGzip, true, 1, []byte("this is not gzip data at all")), ErrCorruptBatch},
		{"zstd frames of zeros", batch(codecZstd, true, 1, bytes.Repeat(frame, 250)), ErrCorruptBatch},
		{"over maxDecompressed", batch(codecZstd, false, 1, records(kmsg.Record{Value: make([]byte, maxDecompressed)})), ErrCorruptBatch},
		{"header key null", batch(codecNone, false, 1, nullHeaderKey), ErrCorruptBatch},
	}
	for codec := codecGzip; codec <= codecZstd; codec++ {
		cases = append(cases,
			refusal{fmt.Sprintf("codec %d: record of one byte", codec), batch(codec, false, 1, oneByteBody), ErrCorruptBatch},
			refusal{fmt.Sprintf("codec %d: bytes after the last record", codec), batch(codec, false, 1, append(records(kmsg.Record{Value: []byte("v")}), 0)), ErrCorruptBatch})
	}
	for _, c := range cases {
		if _, err := l.Append(c.batch); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("refused batches were written: end %d, size %d", l.EndOffset(), l.Size())
	}
	for codec := codecNone; codec <= codecZstd; codec++ {
		if _, err := l.Append(batch(codec, false, 2, good)); err != nil {
			t.Errorf("codec %d: a good batch: %v", codec, err)
		}
	}
}

// TestTimeLookupsWhileAppending: OffsetForTime and MaxTimestamp read the
// active segment's largest timestamp and time index while appends grow
// them (run with -race). OffsetForTime once read them before taking the
// lock that guards them.
func TestTimeLookupsWhileAppending(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.SegmentBytes = 1 << 30 // one active segment throughout
	s, l := openPartition(t, cfg)
	defer s.Close()
	base := clk.ms()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			if _, err := l.Append(simpleBatch(t, "a", 2, base+int64(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			m, err := l.MaxTimestamp()
			if err != nil || m != base+199 {
				t.Fatalf("MaxTimestamp = %d, %v; want base+199", m-base, err)
			}
			return
		default:
		}
		if _, _, err := l.OffsetForTime(base + 100); err != nil {
			t.Fatal(err)
		}
		if _, err := l.MaxTimestamp(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadAppendLeft: left is the size of the batch that maxBytes left
// out of a read (-1 when its header was not read), and 0 when nothing
// was left out for it: at the high watermark, or at the end of the
// read's segment (reads never span two), though batches follow in the
// next.
func TestReadAppendLeft(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.SegmentBytes = 1 << 10
	s, l := openPartition(t, cfg)
	defer s.Close()
	one := len(simpleBatch(t, "b", 3, 0))
	perSeg := int(cfg.SegmentBytes) / one
	if perSeg < 3 {
		t.Fatalf("%d batches of %d bytes per segment", perSeg, one)
	}
	for i := range 2 * perSeg {
		appendDurable(t, l, simpleBatch(t, "b", 3, clk.ms()+int64(i)))
	}
	for _, c := range []struct {
		max, batches int
		left         int64
	}{{1, 1, -1}, {2*one - 1, 1, int64(one)}, {2 * one, 2, -1}, {2*one + batchPeekLen - 1, 2, -1}, {2*one + batchPeekLen, 2, int64(one)}, {1 << 20, perSeg, 0}} {
		b, left, err := l.ReadAppendLeft(nil, 0, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != c.batches*one || left != c.left {
			t.Errorf("ReadAppendLeft(0, %d): %d bytes, %d left; want %d batches of %d, %d left", c.max, len(b), left, c.batches, one, c.left)
		}
	}
	if b, left, err := l.ReadAppendLeft(nil, int64(3*(2*perSeg-1)), 1<<20); err != nil || len(b) != one || left != 0 {
		t.Errorf("the last batch: %d bytes, %d left, %v; want %d, 0 left", len(b), left, err, one)
	}
}
