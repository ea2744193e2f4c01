package kafka

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// legacyMsg is a message of the formats before record batches (magic 0
// or 1) at offset off: attributes attrs, timestamp ts (magic 1), key
// and value (nil: null).
func legacyMsg(magic, attrs byte, off, ts int64, key, value []byte) []byte {
	msg := []byte{magic, attrs}
	if magic == 1 {
		msg = binary.BigEndian.AppendUint64(msg, uint64(ts))
	}
	for _, v := range [][]byte{key, value} {
		if v == nil {
			msg = binary.BigEndian.AppendUint32(msg, math.MaxUint32)
			continue
		}
		msg = append(binary.BigEndian.AppendUint32(msg, uint32(len(v))), v...)
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(off))
	b = binary.BigEndian.AppendUint32(b, uint32(4+len(msg)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(msg))
	return append(b, msg...)
}

// messageSet is a message set of the formats before record batches
// (magic 0 or 1), one uncompressed message a value, from offset base.
func messageSet(magic byte, base int64, values ...string) []byte {
	var b []byte
	for i, v := range values {
		b = append(b, legacyMsg(magic, 0, base+int64(i), 1_700_000_000_000+int64(i), nil, []byte(v))...)
	}
	return b
}

// valuePastSize is a message (magic 0) whose value length says more
// bytes than it holds, its CRC right.
func valuePastSize() []byte {
	b := legacyMsg(0, 0, 0, 0, nil, []byte("abc"))
	binary.BigEndian.PutUint32(b[22:], 10)
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

// gzipped is b compressed with gzip.
func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBatchDecodeMessageSets: the message sets of the formats before
// record batches (magic 0 and 1, which a broker answers as it holds
// them for data written before Kafka 0.11), are read as kgo's consumer
// reads them, the Log's reader before it decoded batches itself: whatever
// the size of their messages, compressed or not (offsets absolute in a
// compressed magic 0 set, relative to the wrapper's in magic 1, with
// gaps left by compaction), log append time from the wrapper, mixed
// with record batches; what cannot be read is refused.
func TestBatchDecodeMessageSets(t *testing.T) {
	for _, magic := range []byte{0, 1} {
		data := messageSet(magic, 5, "a", "b", "c", "d")
		ms, next, err := decodeAll(t, data, 5)
		if err != nil || next != 9 || fmt.Sprint(offsets(ms)) != "[5 6 7 8]" || string(ms[3].Payload) != "d" || ms[3].Key != nil {
			t.Fatalf("magic %d: %v, next %d, %v", magic, offsets(ms), next, err)
		}
		if want := time.UnixMilli(1_700_000_000_003); magic == 1 && !ms[3].Time.Equal(want) || magic == 0 && !ms[3].Time.IsZero() {
			t.Errorf("magic %d: time %v", magic, ms[3].Time)
		}
		if ms, next, err = decodeAll(t, data[:len(data)-3], 7); err != nil || next != 8 || fmt.Sprint(offsets(ms)) != "[7]" {
			t.Errorf("magic %d, the last message cut, from 7: %v, next %d, %v: want [7], next 8", magic, offsets(ms), next, err)
		}
		if next, whole, first := scanBatches(data[:len(data)-3]); next != 8 || !whole || first != 26+8*int(magic)+1 {
			t.Errorf("magic %d, scan of a cut set: next %d, whole %v, first %d", magic, next, whole, first)
		}
	}
	// Compressed, magic 1: inner offsets relative, 2 compacted away;
	// the wrapper (at the last one's offset) has the log append time.
	var inner []byte
	for i, rel := range []int64{0, 1, 3} {
		inner = append(inner, legacyMsg(1, 0, rel, 5, []byte{'k', byte('0' + i)}, []byte{'v', byte('0' + i)})...)
	}
	v1 := legacyMsg(1, byte(kgo.CodecGzip)|attrLogAppendTime, 23, 1_700_000_009_000, nil, gzipped(t, inner))
	// Compressed, magic 0: inner offsets absolute.
	inner = append(legacyMsg(0, 0, 30, 0, nil, []byte("x")), legacyMsg(0, 0, 31, 0, nil, []byte("y"))...)
	v0 := legacyMsg(0, byte(kgo.CodecGzip), 31, 0, nil, gzipped(t, inner))
	data := slices.Concat(v1, v0, plainBatch(32, 2).bytes(t))
	ms, next, err := decodeAll(t, data, 21)
	if err != nil || next != 34 || fmt.Sprint(offsets(ms)) != "[21 23 30 31 32 33]" {
		t.Fatalf("compressed sets and a batch, from 21: %v, next %d, %v: want [21 23 30 31 32 33], next 34", offsets(ms), next, err)
	}
	if string(ms[1].Key) != "k2" || string(ms[1].Payload) != "v2" || !ms[1].Time.Equal(time.UnixMilli(1_700_000_009_000)) || string(ms[3].Payload) != "y" {
		t.Fatalf("compressed sets: %+v", ms)
	}
	bad := map[string][]byte{
		"crc":             slices.Concat(messageSet(1, 0, "a")[:len(messageSet(1, 0, "a"))-1], []byte("b")),
		"magic 3":         slices.Concat(messageSet(1, 0, "a")[:16], []byte{3}, messageSet(1, 0, "a")[17:]),
		"nested":          legacyMsg(1, byte(kgo.CodecGzip), 0, 0, nil, gzipped(t, legacyMsg(1, byte(kgo.CodecGzip), 0, 0, nil, gzipped(t, messageSet(1, 0, "a"))))),
		"wrapper before":  legacyMsg(1, byte(kgo.CodecGzip), 1, 0, nil, gzipped(t, messageSet(1, 0, "a", "b", "c"))),
		"not gzip":        legacyMsg(1, byte(kgo.CodecGzip), 0, 0, nil, []byte("not gzip")),
		"codec 4":         legacyMsg(1, 4, 0, 0, nil, gzipped(t, messageSet(1, 0, "a"))),
		"a length short":  slices.Concat(binary.BigEndian.AppendUint32(messageSet(0, 0, "a")[:8], 10), messageSet(0, 0, "a")[12:]),
		"inner cut":       legacyMsg(1, byte(kgo.CodecGzip), 0, 0, nil, gzipped(t, messageSet(1, 0, "a")[:20])),
		"value past size": valuePastSize(),
	}
	for name, data := range bad {
		ms, _, err := decodeAll(t, data, 0)
		t.Logf("%s: %v", name, err)
		if !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %v, %v: want ErrCorruptBatch", name, offsets(ms), err)
		}
	}
}

// TestBatchDecodeOffsetDeltas: a record whose offset delta is past the
// batch's last, however large (base + delta overflowing), and a negative
// record count, are refused, not skipped.
func TestBatchDecodeOffsetDeltas(t *testing.T) {
	tb := testBatch{base: math.MaxInt64 - 10, lastDelta: 2, records: []testRecord{
		{offsetDelta: 0, value: []byte("a")}, {offsetDelta: math.MaxInt32, value: []byte("b")}}}
	if ms, _, err := decodeAll(t, tb.bytes(t), math.MaxInt64-10); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("offset delta past the last, overflowing: %v, %v: want ErrCorruptBatch", offsets(ms), err)
	}
	tb = testBatch{base: 0, lastDelta: 4, wrongCount: -1}
	if ms, _, err := decodeAll(t, tb.bytes(t), 0); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("record count -1: %v, %v: want ErrCorruptBatch", offsets(ms), err)
	}
}

// zstdBatch is a batch of one record whose value is size zero bytes,
// compressed with zstd in one frame that says its size, made without
// holding the record whole.
func zstdBatch(t testing.TB, size int) []byte {
	t.Helper()
	var body []byte
	body = append(body, 0)               // attributes
	body = binary.AppendVarint(body, 0)  // time delta
	body = binary.AppendVarint(body, 0)  // offset delta
	body = binary.AppendVarint(body, -1) // null key
	body = binary.AppendVarint(body, int64(size))
	rec := binary.AppendVarint(nil, int64(len(body)+size+1))
	rec = append(rec, body...)
	var frame bytes.Buffer
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	enc.ResetContentSize(&frame, int64(len(rec)+size+1))
	zeros := make([]byte, 1<<20)
	enc.Write(rec)
	for left := size; left > 0; left -= len(zeros) {
		enc.Write(zeros[:min(left, len(zeros))])
	}
	enc.Write([]byte{0}) // no headers
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	tb := testBatch{base: 0, lastDelta: 0, wrongCount: 1, compressWith: fixedCompressor(frame.Bytes())}
	return tb.bytes(t)
}

// fixedCompressor is records compressed already (zstd), whatever a
// testBatch would compress.
type fixedCompressor []byte

func (c fixedCompressor) Compress(*bytes.Buffer, []byte, ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	return c, kgo.CodecZstd
}

// TestLogDecompressBound: a batch that decompresses larger than the
// Log's bound (kgo.MaxDecompressBatchBytes in Config.Options, else
// logMaxDecompress) is refused, not decompressed: a few KiB from a
// broker cannot make a Log allocate GiBs.
func TestLogDecompressBound(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "bound", 1)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cfg := parse(t, "logd://"+addr+"/bound")
	cfg.Options = append(cfg.Options, kgo.MaxDecompressBatchBytes(1<<20))
	small, err := OpenLog(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	m := &transport.Message{}
	decode := func(l *Log, data []byte) (int, error) {
		l.dec.begin(nil)
		n, _, _, _, err := l.dec.decode(data, 0, 0, m, func(*transport.Message) {})
		return n, err
	}
	if n, err := decode(small, zstdBatch(t, 512<<10)); err != nil || n != 1 {
		t.Fatalf("512 KiB, bound 1 MiB: %d records, %v", n, err)
	}
	// Refused by kgo's bound, or by zstd's window bound (the most
	// memory it may take), either way before decompressing.
	if n, err := decode(small, zstdBatch(t, 2<<20)); n != 0 || !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("2 MiB, bound 1 MiB: %d records, %v: want refused", n, err)
	}
	def, err := OpenLog(ctx, parse(t, "logd://"+addr+"/bound"))
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	bomb := zstdBatch(t, logMaxDecompress+1)
	t.Logf("a batch of %d bytes decompressing to %d", len(bomb), logMaxDecompress+1)
	if n, err := decode(def, bomb); n != 0 || !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("%d bytes, the default bound: %d records, %v: want refused", logMaxDecompress+1, n, err)
	} else {
		t.Log(err)
	}
}

// TestBatchDecodeCompacted: a batch compaction emptied (no records, its
// last offset delta kept) moves the next offset past it, handing
// nothing; one it thinned hands what is left, at their offsets, the
// next offset past its last delta; and a Log read there moves on past
// an empty one to the records after it.
func TestBatchDecodeCompacted(t *testing.T) {
	empty := testBatch{base: 0, lastDelta: 9}
	thinned := testBatch{base: 10, lastDelta: 9, records: []testRecord{{offsetDelta: 2, value: []byte("a")}, {offsetDelta: 7, value: []byte("b")}}}
	data := slices.Concat(empty.bytes(t), thinned.bytes(t))
	ms, next, err := decodeAll(t, data, 0)
	if err != nil || next != 20 || fmt.Sprint(offsets(ms)) != "[12 17]" {
		t.Fatalf("%v, next %d, %v: want [12 17], next 20", offsets(ms), next, err)
	}
	if ms, next, err = decodeAll(t, empty.bytes(t), 3); err != nil || next != 10 || len(ms) != 0 {
		t.Fatalf("the empty batch alone, from 3: %v, next %d, %v: want none, next 10", offsets(ms), next, err)
	}
	f := &fakeBroker{end: 21, batches: [][]byte{empty.bytes(t), thinned.bytes(t), plainBatch(20, 1).bytes(t)}}
	log := fakeLog(t, f, int32(len(f.batches[0]))) // the empty batch alone first
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var got []uint64
	for pos := uint64(3); pos < 21; {
		if _, err := log.ReadEach(ctx, transport.StreamID{Topic: "f"}, pos, func(m *transport.Message) { got = append(got, m.Seq); pos = m.Seq + 1 }); err != nil {
			t.Fatalf("read at %d: %v", pos, err)
		}
	}
	if fmt.Sprint(got) != "[12 17 20]" {
		t.Fatalf("reads from 3: %v, want [12 17 20]", got)
	}
}
