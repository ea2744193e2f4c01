package logd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawBatch encodes a RecordBatch v2 with the given attributes, record
// count and records section (as is: not compressed here), with a valid
// CRC-32C.
func rawBatch(attrs int16, n int32, records []byte, ts int64) []byte {
	b := kmsg.RecordBatch{
		Magic: 2, Attributes: attrs, LastOffsetDelta: n - 1,
		FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: n, Records: records,
	}
	b.Length = int32(61 - 12 + len(records))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceRaw sends one partition's records as they are (acks=all) and
// returns the partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestListOffsetsByTimeCompressionBomb: a 29 KB zstd batch of 250
// frames of 1 MiB of zeros each, looked into by a ListOffsets by
// timestamp, is read as a stream, never inflated whole (it once made
// the server allocate 31 GiB for one ~100-byte request).
func TestListOffsetsByTimeCompressionBomb(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxInFlightRequestBytes = 2 << 20
	})
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	enc, _ := zstd.NewWriter(nil)
	frame := enc.EncodeAll(make([]byte, 1<<20), nil)
	var bomb []byte
	for i := 0; i < 250; i++ {
		bomb = append(bomb, frame...)
	}
	now := time.Now().UnixMilli()
	if p := produceRaw(t, cl, "t", rawBatch(4 /* zstd */, 1, bomb, now)); p.ErrorCode != 0 {
		t.Logf("produce refused the bomb: error %d", p.ErrorCode)
	}
	req := newListOffsets("t")
	req.Topics[0].Partitions[0].Timestamp = now - 1000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := req.RequestWith(context.Background(), cl)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("ListOffsets: error %d, %d KiB allocated", resp.Topics[0].Partitions[0].ErrorCode, allocated>>10)
	if allocated > 32<<20 {
		t.Errorf("one ListOffsets made the server allocate %d MiB (request memory bound: 2 MiB)", allocated>>20)
	}
}

// TestProduceRefusesUndecodableRecords: Produce reads every record, as
// Kafka's LogValidator does, and answers CORRUPT_MESSAGE for records
// that do not decode: a batch flagged gzip that is not gzip was once
// stored and then failed every compaction pass of its partition and
// every ListOffsets by time; a record of one byte was stored too.
func TestProduceRefusesUndecodableRecords(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	now := time.Now().UnixMilli()
	enc, _ := zstd.NewWriter(nil)
	frame := enc.EncodeAll(make([]byte, 1<<20), nil)
	for _, c := range []struct {
		name  string
		batch []byte
	}{
		{"gzip that is not", rawBatch(1 /* gzip */, 1, []byte("this is not gzip data at all"), now)},
		{"record of one byte", rawBatch(0, 1, []byte{0x02, 0x00}, now)},
		{"250 zstd frames of zeros", rawBatch(4 /* zstd */, 1, bytes.Repeat(frame, 250), now)},
	} {
		if p := produceRaw(t, cl, "t", c.batch); p.ErrorCode != kerr.CorruptMessage.Code {
			t.Errorf("%s: error %d, want %d (CORRUPT_MESSAGE)", c.name, p.ErrorCode, kerr.CorruptMessage.Code)
		}
	}
	if p := produceRaw(t, cl, "t", recordBatch([]byte("good"))); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Errorf("a good batch after them: error %d at offset %d, want 0 at 0", p.ErrorCode, p.BaseOffset)
	}
}

// TestProduceRefusesTwoBatchesInAPartition: a partition's records in a
// Produce are exactly one batch, as Kafka requires (INVALID_RECORD),
// so an answer with an error never follows an append of some of them:
// a good batch then a corrupt one was once answered CORRUPT_MESSAGE
// with the good one appended, and the producer's retry stored it twice.
func TestProduceRefusesTwoBatchesInAPartition(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	good := recordBatch([]byte("a"))
	bad := recordBatch([]byte("b"))
	bad[len(bad)-1] ^= 0xff // CRC mismatch
	for _, c := range []struct {
		name    string
		records []byte
	}{
		{"good then corrupt", append(append([]byte{}, good...), bad...)},
		{"two good", append(append([]byte{}, good...), good...)},
	} {
		if p := produceRaw(t, cl, "t", c.records); p.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("%s: error %d, want %d (INVALID_RECORD)", c.name, p.ErrorCode, kerr.InvalidRecord.Code)
		}
	}
	if p := produceRaw(t, cl, "t", good); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Errorf("the next batch: error %d at offset %d, want 0 at 0: refused batches were appended", p.ErrorCode, p.BaseOffset)
	}
}

// TestProduceCompactedTopicNeedsKeys: a compacted topic refuses a batch
// with records without a key as Kafka does — INVALID_RECORD, the keyless
// records named in the record errors (Produce v8+), the reason given —
// and appends nothing of it; keyed records are taken after it. A topic
// that deletes takes keyless records.
func TestProduceCompactedTopicNeedsKeys(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr, kgo.RecordRetries(0))
	createTopic(t, cl, "kv", 1, "cleanup.policy", "compact")
	createTopic(t, cl, "plain", 1)

	p := produceRaw(t, cl, "kv", recordBatch([]byte("a"), []byte("b")))
	if p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("keyless batch: error %d, want %d (INVALID_RECORD)", p.ErrorCode, kerr.InvalidRecord.Code)
	}
	if len(p.ErrorRecords) != 2 || p.ErrorRecords[0].RelativeOffset != 0 || p.ErrorRecords[1].RelativeOffset != 1 ||
		p.ErrorRecords[0].ErrorMessage == nil || !strings.Contains(*p.ErrorRecords[0].ErrorMessage, "without key") {
		t.Errorf("keyless batch: record errors %+v, want records 0 and 1, the first saying why", p.ErrorRecords)
	}
	if p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "without key") {
		t.Errorf("keyless batch: error message %v, want the reason", p.ErrorMessage)
	}

	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kv", Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("franz-go keyless record: %v, want INVALID_RECORD", err)
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "kv", Key: []byte("k"), Value: []byte("v")}).First()
	if err != nil || r.Offset != 0 {
		t.Fatalf("keyed record after the refused ones: offset %v, %v; want offset 0 (nothing appended before)", r, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "plain", Value: []byte("no key")}).FirstErr(); err != nil {
		t.Errorf("keyless record on a topic that deletes: %v", err)
	}
}

// TestProduceMaxTimestampFromRecords: a batch's MaxTimestamp is set
// from its records, and its timestamp type to CreateTime, as Kafka's
// LogValidator does, whatever the producer wrote there. A batch whose
// header understated its records' timestamps was once stored as sent:
// ListOffsets by time skipped its records (and the segment's largest
// timestamp, which time-based retention goes by, was understated too);
// one that claimed LogAppendTime had every record read back with the
// header's timestamp.
func TestProduceMaxTimestampFromRecords(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "t", 1)
	recordsAt := func(deltas ...int64) []byte {
		var out []byte
		for i, d := range deltas {
			r := kmsg.Record{Value: []byte("v"), OffsetDelta: int32(i), TimestampDelta64: d}
			body := r.AppendTo(nil)[1:]
			out = append(out, append(binary.AppendVarint(nil, int64(len(body))), body...)...)
		}
		return out
	}
	const attrLogAppendTime = 0x08
	for _, b := range [][]byte{
		rawBatch(0, 2, recordsAt(0, 4000), 1000),                 // offsets 0-1 at 1000, 5000; header says 1000
		rawBatch(attrLogAppendTime, 2, recordsAt(0, 1000), 6000), // offsets 2-3 at 6000, 7000; header says LogAppendTime 6000
	} {
		if p := produceRaw(t, cl, "t", b); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	for _, tc := range []struct{ at, offset, found int64 }{{3000, 1, 5000}, {6500, 3, 7000}} {
		req := newListOffsets("t")
		req.Topics[0].Partitions[0].Timestamp = tc.at
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		if p := resp.Topics[0].Partitions[0]; p.Offset != tc.offset || p.Timestamp != tc.found {
			t.Errorf("ListOffsets(%d) = offset %d at %d, want %d at %d", tc.at, p.Offset, p.Timestamp, tc.offset, tc.found)
		}
	}
	consumer := newClient(t, ts.addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for i, r := range consume(t, consumer, 4) {
		if want := []int64{1000, 5000, 6000, 7000}[i]; r.Timestamp.UnixMilli() != want || r.Attrs.TimestampType() != 0 {
			t.Errorf("record %d read back at %d (type %d), want %d (CreateTime)", r.Offset, r.Timestamp.UnixMilli(), r.Attrs.TimestampType(), want)
		}
	}
}
