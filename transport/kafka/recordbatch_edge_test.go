package kafka

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"
)

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
