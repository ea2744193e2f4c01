package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// testRecord is a record a test writes into a batch.
type testRecord struct {
	offsetDelta int32
	timeDelta   int64
	key, value  []byte // nil: null
	headers     []transport.Header
}

// testBatch is a record batch (v2) a test writes, as Kafka lays it out.
type testBatch struct {
	base         int64
	attrs        uint16
	lastDelta    int32 // -1: the last record's offset delta
	baseTime     int64
	maxTime      int64
	producer     int64
	records      []testRecord
	corruptCRC   bool
	magic        int8 // 0: 2
	trailing     []byte
	wrongCount   int32 // not 0: the record count the header says
	compressWith kgo.Compressor
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

func (tb testBatch) bytes(t testing.TB) []byte {
	var recs []byte
	for _, r := range tb.records {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, r.timeDelta)
		body = binary.AppendVarint(body, int64(r.offsetDelta))
		body = appendVarBytes(body, r.key)
		body = appendVarBytes(body, r.value)
		body = binary.AppendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendVarBytes(body, []byte(h.Key))
			body = appendVarBytes(body, h.Value)
		}
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	recs = append(recs, tb.trailing...)
	attrs := tb.attrs
	if tb.compressWith != nil {
		var buf bytes.Buffer
		out, codec := tb.compressWith.Compress(&buf, recs)
		recs = append([]byte(nil), out...)
		attrs |= uint16(codec)
	}
	lastDelta := tb.lastDelta
	if lastDelta == -1 {
		lastDelta = tb.records[len(tb.records)-1].offsetDelta
	}
	count := int32(len(tb.records))
	if tb.wrongCount != 0 {
		count = tb.wrongCount
	}
	magic := tb.magic
	if magic == 0 {
		magic = 2
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(tb.base))
	b = binary.BigEndian.AppendUint32(b, uint32(batchHeaderLen-batchLengthAt+len(recs)))
	b = binary.BigEndian.AppendUint32(b, 0) // leader epoch
	b = append(b, byte(magic))
	b = binary.BigEndian.AppendUint32(b, 0) // CRC, below
	b = binary.BigEndian.AppendUint16(b, attrs)
	b = binary.BigEndian.AppendUint32(b, uint32(lastDelta))
	b = binary.BigEndian.AppendUint64(b, uint64(tb.baseTime))
	b = binary.BigEndian.AppendUint64(b, uint64(tb.maxTime))
	b = binary.BigEndian.AppendUint64(b, uint64(tb.producer))
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(count))
	b = append(b, recs...)
	crc := crc32.Checksum(b[21:], castagnoli)
	if tb.corruptCRC {
		crc++
	}
	binary.BigEndian.PutUint32(b[17:], crc)
	return b
}

// plainBatch is an uncompressed batch of n records from base, record i
// with value "v<base+i>", key "k<i>" on even ones, a header "hdr" = i.
func plainBatch(base int64, n int) testBatch {
	tb := testBatch{base: base, lastDelta: -1, baseTime: 1_700_000_000_000, maxTime: 1_700_000_009_000}
	for i := range n {
		r := testRecord{offsetDelta: int32(i), timeDelta: int64(i), value: fmt.Appendf(nil, "v%d", base+int64(i)),
			headers: []transport.Header{{Key: "hdr", Value: fmt.Appendf(nil, "%d", i)}}}
		if i%2 == 0 {
			r.key = fmt.Appendf(nil, "k%d", i)
		}
		tb.records = append(tb.records, r)
	}
	return tb
}

// decoded is what decode handed: copies of the messages.
func decodeAll(t testing.TB, data []byte, from int64, aborted ...kmsg.FetchResponseTopicPartitionAbortedTransaction) ([]transport.Message, int64, error) {
	t.Helper()
	d := newBatchDecoder(kgo.DefaultDecompressor())
	var out []transport.Message
	m := &transport.Message{Topic: "t"}
	d.begin(aborted)
	n, _, next, _, err := d.decode(data, from, 0, m, func(m *transport.Message) {
		c := *m
		c.Headers = append([]transport.Header(nil), m.Headers...)
		out = append(out, c)
	})
	if n != len(out) {
		t.Fatalf("decode says %d records, handed %d", n, len(out))
	}
	return out, next, err
}

// offsets lists the messages' offsets.
func offsets(ms []transport.Message) []uint64 {
	var o []uint64
	for _, m := range ms {
		o = append(o, m.Seq)
	}
	return o
}

// TestBatchDecode: the records of whole batches are handed with their
// offsets, times, keys (null and not), values and headers; a fetch from
// the middle of a batch skips what comes before; a batch cut at the end
// of the fetch is left for the next one.
func TestBatchDecode(t *testing.T) {
	data := append(plainBatch(10, 5).bytes(t), plainBatch(15, 3).bytes(t)...)
	ms, next, err := decodeAll(t, data, 10)
	if err != nil || next != 18 || len(ms) != 8 {
		t.Fatalf("%d records, next %d, %v: want 8, 18", len(ms), next, err)
	}
	for i, m := range ms {
		off := 10 + i
		delta := off - 10
		if off >= 15 {
			delta = off - 15
		}
		if m.Seq != uint64(off) || string(m.Payload) != fmt.Sprintf("v%d", off) ||
			!m.Time.Equal(time.UnixMilli(1_700_000_000_000+int64(delta))) ||
			len(m.Headers) != 1 || m.Headers[0].Key != "hdr" || string(m.Headers[0].Value) != fmt.Sprint(delta) {
			t.Fatalf("record %d: %+v", i, m)
		}
		if (delta%2 == 0) != (m.Key != nil) || m.Key != nil && string(m.Key) != fmt.Sprintf("k%d", delta) {
			t.Fatalf("record %d: key %q", i, m.Key)
		}
	}
	// From the middle of the first batch.
	if ms, next, err = decodeAll(t, data, 13); err != nil || next != 18 || fmt.Sprint(offsets(ms)) != "[13 14 15 16 17]" {
		t.Fatalf("from 13: %v, next %d, %v", offsets(ms), next, err)
	}
	// The second batch cut: left for the next fetch.
	for cut := 1; cut < len(data)-len(plainBatch(10, 5).bytes(t)); cut += 7 {
		ms, next, err = decodeAll(t, data[:len(data)-cut], 10)
		if err != nil || next != 15 || len(ms) != 5 {
			t.Fatalf("second batch cut by %d: %v, next %d, %v: want 10..14, next 15", cut, offsets(ms), next, err)
		}
	}
	if next, whole, first := scanBatches(data[:len(data)-1]); next != 15 || !whole || first != len(plainBatch(10, 5).bytes(t)) {
		t.Fatalf("scan of a cut fetch: next %d, whole %v, first %d", next, whole, first)
	}
	if _, whole, first := scanBatches(data[:70]); whole || first != len(plainBatch(10, 5).bytes(t)) {
		t.Fatalf("scan of a first batch cut: whole %v, first %d: want its length", whole, first)
	}
	// Log append time: every record has the batch's max timestamp.
	lat := plainBatch(0, 2)
	lat.attrs = attrLogAppendTime
	if ms, _, err = decodeAll(t, lat.bytes(t), 0); err != nil || len(ms) != 2 || !ms[1].Time.Equal(time.UnixMilli(1_700_000_009_000)) {
		t.Fatalf("log append time: %+v, %v", ms, err)
	}
	// No headers: nil Headers; an empty value is not a null one.
	bare := testBatch{base: 0, lastDelta: -1, records: []testRecord{{value: []byte{}}}}
	if ms, _, err = decodeAll(t, bare.bytes(t), 0); err != nil || len(ms) != 1 || ms[0].Headers != nil || ms[0].Payload == nil || ms[0].Key != nil {
		t.Fatalf("bare record: %+v, %v", ms, err)
	}
}

// TestBatchDecodeLimit: with a limit, decoding stops after the batch
// that reaches it, and goes on from there with the rest, an aborted
// transaction staying skipped.
func TestBatchDecodeLimit(t *testing.T) {
	aborted := plainBatch(3, 2)
	aborted.attrs, aborted.producer = attrTransactional, 5
	later := plainBatch(7, 2)
	later.attrs, later.producer = attrTransactional, 5
	var data []byte
	for _, tb := range []testBatch{plainBatch(0, 3), aborted, plainBatch(5, 2), later, plainBatch(9, 1)} {
		data = append(data, tb.bytes(t)...)
	}
	d := newBatchDecoder(kgo.DefaultDecompressor())
	d.begin([]kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 3}})
	var got []uint64
	fn := func(m *transport.Message) { got = append(got, m.Seq) }
	m := &transport.Message{}
	n, after, next, rest, err := d.decode(data, 1, 2, m, fn)
	if err != nil || n != 2 || after != 3 || next != 3 || fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("first call: %v (%d), after %d, next %d, %v", got, n, after, next, err)
	}
	n, after, next, rest, err = d.decode(rest, after, 2, m, fn)
	if err != nil || n != 2 || after != 7 || next != 7 || fmt.Sprint(got) != "[1 2 5 6]" {
		t.Fatalf("second call: %v (%d), after %d, next %d, %v", got, n, after, next, err)
	}
	n, _, next, rest, err = d.decode(rest, after, 2, m, fn)
	if err != nil || n != 1 || next != 10 || len(rest) != 0 || fmt.Sprint(got) != "[1 2 5 6 9]" {
		t.Fatalf("third call: %v (%d), next %d, %d bytes left, %v", got, n, next, len(rest), err)
	}
}

// TestBatchDecodeCompressed: batches compressed with each codec Kafka
// has are read as the uncompressed ones.
func TestBatchDecodeCompressed(t *testing.T) {
	for _, c := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(c)
		if err != nil {
			t.Fatal(err)
		}
		tb := plainBatch(100, 50)
		tb.compressWith = comp
		data := tb.bytes(t)
		if binary.BigEndian.Uint16(data[21:])&attrCodec == 0 {
			t.Fatalf("%v: the batch is not compressed", c)
		}
		ms, next, err := decodeAll(t, data, 120)
		if err != nil || next != 150 || len(ms) != 30 || string(ms[0].Payload) != "v120" || string(ms[29].Headers[0].Value) != "49" {
			t.Fatalf("%v: %d records, next %d, %v", c, len(ms), next, err)
		}
	}
}

// TestBatchDecodeRefuses: a batch that cannot be read is an error, not
// records made up: a CRC that does not match, an unknown message format,
// an unknown codec, a record count or length that disagrees with the
// bytes, a compressed batch that does not decompress.
func TestBatchDecodeRefuses(t *testing.T) {
	bad := map[string]testBatch{}
	tb := plainBatch(0, 3)
	tb.corruptCRC = true
	bad["crc"] = tb
	tb = plainBatch(0, 3)
	tb.magic = 3
	bad["magic 3"] = tb
	tb = plainBatch(0, 3)
	tb.attrs = 5
	bad["codec 5"] = tb
	tb = plainBatch(0, 3)
	tb.wrongCount = 4
	bad["count 4 of 3"] = tb
	tb = plainBatch(0, 3)
	tb.wrongCount = 2
	bad["count 2 of 3"] = tb
	tb = plainBatch(0, 3)
	tb.trailing = []byte{1}
	tb.wrongCount = 4
	bad["a record cut"] = tb
	tb = plainBatch(0, 3)
	tb.attrs = uint16(kgo.CodecSnappy)
	bad["not snappy"] = tb
	tb = plainBatch(0, 3)
	tb.lastDelta = 1
	bad["offset past the last"] = tb
	for name, tb := range bad {
		if ms, _, err := decodeAll(t, tb.bytes(t), 0); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %d records, %v: want ErrCorruptBatch", name, len(ms), err)
		}
	}
	short := plainBatch(0, 1).bytes(t)
	binary.BigEndian.PutUint32(short[8:], 10)
	if _, _, err := decodeAll(t, short, 0); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("a length shorter than a batch header: %v", err)
	}
}

// TestBatchDecodeTransactions: control batches are never handed; with
// the fetch's aborted transactions (read_committed) the batches of an
// aborted transaction are skipped up to its abort marker, those of a
// committed one and of other producers are not.
func TestBatchDecodeTransactions(t *testing.T) {
	txn := func(base int64, producer int64, n int) testBatch {
		tb := plainBatch(base, n)
		tb.attrs, tb.producer = attrTransactional, producer
		return tb
	}
	marker := func(base, producer int64, abort bool) testBatch {
		typ := uint16(1)
		if abort {
			typ = 0
		}
		key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), typ)
		return testBatch{base: base, lastDelta: -1, attrs: attrTransactional | attrControl, producer: producer,
			records: []testRecord{{key: key, value: []byte{0, 0, 0, 0, 0, 0}}}}
	}
	var data []byte
	for _, tb := range []testBatch{
		txn(0, 7, 2),        // aborted: 0, 1
		txn(2, 8, 2),        // committed: 2, 3
		marker(4, 7, true),  // abort of 7
		marker(5, 8, false), // commit of 8
		plainBatch(6, 2),    // not transactional: 6, 7
		txn(8, 7, 1),        // 7's next transaction, not aborted: 8
		marker(9, 7, false), // its commit
		txn(10, 9, 1),       // aborted, marker beyond the fetch: 10
		plainBatch(11, 1),   // 11
	} {
		data = append(data, tb.bytes(t)...)
	}
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 9, FirstOffset: 10}, {ProducerID: 7, FirstOffset: 0}}
	ms, next, err := decodeAll(t, data, 0, aborted...)
	if err != nil || next != 12 || fmt.Sprint(offsets(ms)) != "[2 3 6 7 8 11]" {
		t.Fatalf("read_committed: %v, next %d, %v: want [2 3 6 7 8 11], next 12", offsets(ms), next, err)
	}
	ms, _, err = decodeAll(t, data, 0)
	if err != nil || fmt.Sprint(offsets(ms)) != "[0 1 2 3 6 7 8 10 11]" {
		t.Fatalf("no aborted transactions: %v, %v: want every record but the markers", offsets(ms), err)
	}
	// From after an aborted transaction's marker: the producer's next
	// transaction, committed, is read.
	ms, _, err = decodeAll(t, data, 6, aborted...)
	if err != nil || fmt.Sprint(offsets(ms)) != "[6 7 8 11]" {
		t.Fatalf("read_committed from 6: %v, %v: want [6 7 8 11]", offsets(ms), err)
	}
}

// TestBatchDecodeAllocates: an uncompressed batch is handed with no
// allocation per record (nor per fetch, once the header keys are known).
func TestBatchDecodeAllocates(t *testing.T) {
	data := plainBatch(0, 1000).bytes(t)
	d := newBatchDecoder(kgo.DefaultDecompressor())
	m := &transport.Message{}
	sum := 0
	fn := func(m *transport.Message) { sum += len(m.Payload) }
	if _, _, _, _, err := d.decode(data, 0, 0, m, fn); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() { d.begin(nil); d.decode(data, 0, 0, m, fn) }); a != 0 {
		t.Fatalf("%v allocations a fetch of 1000 records, want 0", a)
	}
}

// FuzzRecordBatches: a fetch's bytes, whatever they are, never make the
// decoder panic or hand a record before the position asked for or out
// of order, and what it says is whole is at most what it was given.
func FuzzRecordBatches(f *testing.F) {
	comp, _ := kgo.DefaultCompressor(kgo.SnappyCompression())
	c := plainBatch(20, 4)
	c.compressWith = comp
	for _, seed := range [][]byte{
		plainBatch(0, 3).bytes(f),
		append(plainBatch(0, 2).bytes(f), plainBatch(2, 2).bytes(f)...),
		c.bytes(f),
		plainBatch(0, 3).bytes(f)[:70],
		messageSet(0, 0, "a", "b"),
		legacyMsg(1, byte(kgo.CodecGzip)|attrLogAppendTime, 22, 5, nil, gzipped(f, messageSet(1, 0, "a", "b", "c"))),
	} {
		f.Add(seed, int64(0))
		f.Add(seed, int64(21))
	}
	f.Fuzz(func(t *testing.T, data []byte, from int64) {
		d := newBatchDecoder(kgo.DefaultDecompressor())
		m := &transport.Message{}
		last, handed := int64(-1), 0
		var all []uint64
		n, _, next, _, err := d.decode(data, from, 0, m, func(m *transport.Message) {
			off := int64(m.Seq)
			if off < from || off <= last {
				t.Fatalf("record at %d after %d, asked from %d", off, last, from)
			}
			last = off
			handed++
			all = append(all, m.Seq)
		})
		if n != handed {
			t.Fatalf("%d records said, %d handed", n, handed)
		}
		if err == nil && handed > 0 && next <= last {
			t.Fatalf("next %d, not past the last record handed, %d", next, last)
		}
		if err != nil && !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("error %v is not ErrCorruptBatch", err)
		}
		if err != nil {
			return
		}
		// A batch at a time, from where the last call stopped: the same
		// records.
		var parts []uint64
		rest, at := data, from
		for range len(data) {
			d.begin(nil)
			_, after, _, r, err := d.decode(rest, at, 1, m, func(m *transport.Message) { parts = append(parts, m.Seq) })
			if err != nil {
				t.Fatalf("a batch at a time: %v, at once: none", err)
			}
			if len(r) == len(rest) {
				break
			}
			rest, at = r, after
		}
		if !slices.Equal(all, parts) {
			t.Fatalf("a batch at a time %v, at once %v", parts, all)
		}
		scanBatches(data)
	})
}

// BenchmarkBatchDecode: a fetch of 1000-record batches, uncompressed and
// snappy, decoded record by record.
func BenchmarkBatchDecode(b *testing.B) {
	comp, _ := kgo.DefaultCompressor(kgo.SnappyCompression())
	for _, c := range []struct {
		name string
		comp kgo.Compressor
	}{{"none", nil}, {"snappy", comp}} {
		b.Run(c.name, func(b *testing.B) {
			var data []byte
			for base := int64(0); base < 8000; base += 1000 {
				tb := plainBatch(base, 1000)
				tb.compressWith = c.comp
				data = append(data, tb.bytes(b)...)
			}
			d := newBatchDecoder(kgo.DefaultDecompressor())
			m := &transport.Message{}
			sum := 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d.begin(nil)
				if _, _, _, _, err := d.decode(data, 0, 0, m, func(m *transport.Message) { sum += len(m.Payload) }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*8000), "ns/record")
		})
	}
}
