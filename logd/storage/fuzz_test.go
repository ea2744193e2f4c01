package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// FuzzAppend: arbitrary bytes offered as a produced batch are refused
// with an error or stored and read back byte for byte (base offset
// aside), their records all decoding; decoding records never panics.
func FuzzAppend(f *testing.F) {
	for codec := range 5 {
		f.Add(makeBatch(f, batchSpec{ts: 1, pid: 7, epoch: 1, firstSeq: 0, codec: codec,
			recs: []rec{{key: []byte("k"), value: []byte("v")}, {value: bytes.Repeat([]byte("x"), 300)}}}))
	}
	f.Add(simpleBatch(f, "s", 3, 5)[:70])
	// Records that do not decode: gzip that is not, a record of one byte.
	for _, c := range []struct {
		codec int
		recs  []byte
	}{{codecGzip, []byte("this is not gzip data at all")}, {codecNone, []byte{0x02, 0x00}}} {
		h := kmsg.RecordBatch{NumRecords: 1, ProducerID: -1, FirstSequence: -1}
		b, _ := buildBatch(nil, &h, c.recs)
		b[batchCRCStart+1] |= byte(c.codec)
		binary.BigEndian.PutUint32(b[batchCRCPos:], crc32Castagnoli(b[batchCRCStart:]))
		f.Add(b)
	}
	clk := newClock()
	cfg := testConfig(f, clk)
	cfg.Fsync = FsyncNever
	s, l := openPartition(f, cfg)
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		var h kmsg.RecordBatch
		if err := decodeHeader(b, &h); err == nil {
			forEachRecord(&h, nil, func(*kmsg.Record) bool { return true })
		}
		in := bytes.Clone(b)
		res, err := l.Append(b)
		if err != nil {
			return
		}
		n := int32(0)
		if _, err := forEachRecord(&h, nil, func(*kmsg.Record) bool { n++; return true }); err != nil || n != h.NumRecords {
			t.Fatalf("appended a batch whose records do not decode: %d of %d, %v", n, h.NumRecords, err)
		}
		got, err := l.Read(res.BaseOffset, 1)
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint64(in, uint64(res.BaseOffset))
		if !bytes.Equal(got, in) && !res.Duplicate {
			t.Fatalf("read back %d bytes, appended %d", len(got), len(in))
		}
	})
}

// FuzzRecovery: a partition directory with arbitrary segment, index,
// time index, recovery point and producer state files always opens;
// what it serves is valid, and it takes appends.
func FuzzRecovery(f *testing.F) {
	var seg []byte
	for i := range 6 {
		b := makeBatch(f, batchSpec{ts: int64(i), pid: 3, epoch: 0, firstSeq: int32(i), codec: i % 5, recs: []rec{{key: []byte("k"), value: []byte("v")}}})
		binary.BigEndian.PutUint64(b, uint64(i))
		seg = append(seg, b...)
	}
	idx := offEntry{2, uint32(len(seg) / 3)}.encode(nil)
	times := timeEntry{5, 6, uint32(len(seg))}.encode(nil)
	rp := binary.BigEndian.AppendUint64([]byte{recoveryPointVersion}, 6)
	f.Add(seg, idx, times, rp, []byte{})
	f.Add(seg[:len(seg)-5], idx, times, rp, []byte{1, 2, 3})
	f.Add(append(seg, 0, 0, 0), []byte{}, []byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, seg, idx, times, rp, producers []byte) {
		clk := newClock()
		cfg := testConfig(t, clk)
		cfg.Fsync = FsyncNever
		dir := partitionDir(cfg.Dir, "t", 0)
		os.MkdirAll(dir, 0o755)
		if err := writeTopics(vfs.OS, cfg.Dir, []topicMeta{{Name: "t", Partitions: 1}}); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, segmentName(0))
		os.WriteFile(name+logSuffix, seg, 0o644)
		os.WriteFile(name+indexSuffix, idx, 0o644)
		os.WriteFile(name+timeIndexSuffix, times, 0o644)
		writeStateFile(vfs.OS, filepath.Join(dir, recoveryPointFile), rp)
		writeStateFile(vfs.OS, filepath.Join(dir, producerStateFile), producers)
		s, l := openPartition(t, cfg)
		defer s.Close()
		if l.Size() > int64(len(seg)) {
			t.Fatalf("size %d from %d bytes", l.Size(), len(seg))
		}
		// Below the recovery point damage is found when read: refused,
		// never served.
		for off := l.StartOffset(); off < l.HighWatermark(); off++ {
			b, err := l.Read(off, 1<<16)
			if err != nil {
				if !errors.Is(err, ErrCorruptBatch) {
					t.Fatal(err)
				}
				continue
			}
			decodeBatches(t, b) // fails on any invalid batch
		}
		l.OffsetForTime(3)
		end := l.EndOffset()
		res, err := l.Append(simpleBatch(t, "new", 2, 9))
		if err != nil || res.BaseOffset != end {
			t.Fatalf("append after recovery: %+v, %v (end %d)", res, err, end)
		}
	})
}

// FuzzOffsetsLog: an arbitrary offsets log opens, keeps a valid prefix,
// accounts exactly the bytes it holds (and what its rewrite writes)
// and takes commits.
func FuzzOffsetsLog(f *testing.F) {
	valid := encodeCommit(nil, "g", 1_700_000_000_000, []GroupOffset{{"t", 0, 5, "m"}, {"u", 3, 9, ""}})
	valid = append(valid, encodeDelete(offRecDelTopic, "u")...)
	valid = append(valid, encodeCommitV0(nil, "h", []GroupOffset{{"t", 1, 7, ""}})...)
	f.Add(valid)
	f.Add(valid[:len(valid)-2])
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, offsetsDir), 0o755)
		os.WriteFile(filepath.Join(dir, offsetsDir, offsetsFile), b, 0o644)
		clk := newClock()
		o, err := openOffsetStore(offsetsConfig{vfs.OS, dir, 100, 100, 1 << 30, time.Hour, clk.now, newTestLogger(), nil})
		if err != nil {
			t.Fatal(err)
		}
		defer o.close()
		if err := o.Commit("g", []GroupOffset{{"t", 1, 2, ""}}); err != nil {
			t.Fatal(err)
		}
		if off, _, ok := o.Fetch("g", "t", 1); !ok || off != 2 {
			t.Fatal("commit lost")
		}
		if n, want := o.Bytes(), accounted(o); n != want {
			t.Fatalf("Bytes() = %d, the offsets held count %d", n, want)
		}
		o.mu.Lock()
		live := o.live
		o.mu.Unlock()
		if want := rewrittenBytes(o); live != want {
			t.Fatalf("live accounted at %d bytes, a rewrite writes %d", live, want)
		}
	})
}

// FuzzTopicsFile: an arbitrary topic metadata file never stops a Store
// from opening.
func FuzzTopicsFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"topics":[{"name":"a","partitions":2,"overrides":{"segment_bytes":4096}}]}`))
	f.Add([]byte(`{"version":1,"topics":[{"name":"..","partitions":-1}]}`))
	f.Add([]byte(`{"version":1,"topics":[{"name":"a","partitions":2,"overrides":{"segment_bytes":1}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		clk := newClock()
		cfg := testConfig(t, clk)
		cfg.MaxPartitions = 8
		writeStateFile(vfs.OS, filepath.Join(cfg.Dir, topicsFile), b)
		s, err := Open(cfg)
		if err != nil {
			if bytes.Contains(b, []byte("overrides")) {
				return // overrides the Store refuses: an error, not a panic
			}
			t.Fatal(err)
		}
		s.Close()
	})
}

// FuzzRecordWalk: arbitrary records sections, as they are and
// compressed with each codec, walked record by record (forEachHead: a
// stream, forEachRecord: whole records) never panic, and every codec
// gives the walk of the uncompressed records. Raw compressed sections
// (the first seed: 250 zstd frames of zeros, a bomb) are walked too.
func FuzzRecordWalk(f *testing.F) {
	enc, _ := zstd.NewWriter(nil)
	frame := enc.EncodeAll(make([]byte, 1<<20), nil)
	f.Add(bytes.Repeat(frame, 250), int32(1), uint8(codecZstd), true)
	var recs []byte
	for i := range 3 {
		recs = appendRecord(recs, &kmsg.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("v"),
			Headers: []kmsg.Header{{Key: "h", Value: nil}}})
	}
	f.Add(recs, int32(3), uint8(codecNone), false)
	f.Add([]byte{0x02, 0x00}, int32(1), uint8(codecNone), false)
	f.Fuzz(func(t *testing.T, b []byte, n int32, codec uint8, raw bool) {
		n = max(0, min(n, 1000))
		heads := func(h *kmsg.RecordBatch) ([]recordHead, error) {
			var out []recordHead
			err := forEachHead(h, func(r recordHead) bool { out = append(out, r); return true })
			return out, err
		}
		h := kmsg.RecordBatch{NumRecords: n, Records: b, Attributes: int16(codec % 5)}
		if raw {
			heads(&h)
			forEachRecord(&h, nil, func(*kmsg.Record) bool { return true })
			return
		}
		h.Attributes = codecNone
		want, wantErr := heads(&h)
		var whole int
		_, wholeErr := forEachRecord(&h, nil, func(*kmsg.Record) bool { whole++; return true })
		if wantErr == nil && (wholeErr != nil || whole != len(want)) {
			t.Fatalf("records parse, yet decoding them whole: %d records, %v", whole, wholeErr)
		}
		for c := codecGzip; c <= codecZstd; c++ {
			z, err := compress(nil, b, c)
			if err != nil {
				t.Fatal(err)
			}
			hc := kmsg.RecordBatch{NumRecords: n, Records: z, Attributes: int16(c)}
			got, gotErr := heads(&hc)
			if (gotErr == nil) != (wantErr == nil) || !slices.Equal(got, want) {
				t.Fatalf("codec %d: %v %v, uncompressed: %v %v", c, got, gotErr, want, wantErr)
			}
			var k int
			_, err = forEachRecord(&hc, nil, func(*kmsg.Record) bool { k++; return true })
			if (err == nil) != (wholeErr == nil) || k != whole {
				t.Fatalf("codec %d: whole records %d %v, uncompressed %d %v", c, k, err, whole, wholeErr)
			}
		}
	})
}
