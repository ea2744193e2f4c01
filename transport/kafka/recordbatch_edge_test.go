package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// messageSet is a message set of the formats before record batches
// (magic 0 or 1), one uncompressed message a value, from offset base.
func messageSet(magic byte, base int64, values ...string) []byte {
	var b []byte
	for i, v := range values {
		var msg []byte
		msg = append(msg, magic, 0) // magic, attributes
		if magic == 1 {
			msg = binary.BigEndian.AppendUint64(msg, 1_700_000_000_000)
		}
		msg = binary.BigEndian.AppendUint32(msg, math.MaxUint32) // null key
		msg = binary.BigEndian.AppendUint32(msg, uint32(len(v)))
		msg = append(msg, v...)
		b = binary.BigEndian.AppendUint64(b, uint64(base+int64(i)))
		b = binary.BigEndian.AppendUint32(b, uint32(4+len(msg)))
		b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(msg))
		b = append(b, msg...)
	}
	return b
}

// TestBatchDecodeOldFormat: a message set of the formats before record
// batches (Kafka may answer one for data written by old producers) is
// refused as such, whatever the size of its messages, not taken for a
// batch cut by the fetch size nor for a batch of a wrong length.
func TestBatchDecodeOldFormat(t *testing.T) {
	for _, magic := range []byte{0, 1} {
		for name, data := range map[string][]byte{
			"one small message":  messageSet(magic, 5, "a"),
			"small messages":     messageSet(magic, 5, "a", "b", "c", "d"),
			"one larger message": messageSet(magic, 5, strings.Repeat("x", 100)),
		} {
			ms, _, err := decodeAll(t, data, 5)
			if !errors.Is(err, ErrCorruptBatch) || !strings.Contains(err.Error(), "magic") {
				t.Errorf("magic %d, %s: %d records, %v: want ErrCorruptBatch naming the message format", magic, name, len(ms), err)
			}
			if _, whole, first := scanBatches(data); whole || first != 0 {
				t.Errorf("magic %d, %s: scan says whole %v, first batch of %d bytes: want none (not a batch to fetch whole)", magic, name, whole, first)
			}
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
