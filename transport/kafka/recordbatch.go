package kafka

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// ErrCorruptBatch is a record batch of a fetch that cannot be read: a
// CRC-32C that does not match, a length or count that disagrees with
// its bytes, a message format before v2 (magic 0 or 1), a compression
// codec that is unknown or fails.
var ErrCorruptBatch = errors.New("kafka transport: corrupt record batch")

// batchHeaderLen is the fixed part of a record batch (v2): base offset
// int64, length int32, partition leader epoch int32, magic int8, CRC
// uint32, attributes int16, last offset delta int32, base and max
// timestamps int64, producer ID int64, producer epoch int16, base
// sequence int32, record count int32.
const batchHeaderLen = 61

// batchLengthAt is where a batch's length field ends: the length counts
// the bytes after it.
const batchLengthAt = 12

// batchMagicAt is where a batch's magic byte is: the message format
// version, 2 for a record batch. The message sets of the formats before
// (0 and 1) have theirs there too (offset int64, size int32, CRC int32).
const batchMagicAt = 16

// Batch attributes (Kafka's DefaultRecordBatch).
const (
	attrCodec         = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// maxBatchBytes bounds one record batch a Log will ask a broker for
// when it is larger than the fetch size: what Kafka's own defaults
// allow (message.max.bytes is 1 MiB) many times over.
const maxBatchBytes = 64 << 20

// logMaxDecompress bounds what one record batch a Log reads may
// decompress to, unless Config.Options sets kgo.MaxDecompressBatchBytes:
// a few KiB from a broker could otherwise make a Log allocate GiBs. A
// batch that decompresses to more is ErrCorruptBatch (kgo.ErrMaxDecompress).
const logMaxDecompress = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchDecoder reads the record batches of a partition's fetch and hands
// each record, in place, as a transport.Message it reuses: its Key,
// Payload and header values are slices of the fetch's (or of a
// decompressed batch's) bytes, which it never reuses; its Headers
// slice is reused record after record, and header keys are interned.
// It allocates nothing per record of an uncompressed batch.
type batchDecoder struct {
	dec  kgo.Decompressor
	hdrs []transport.Header
	keys [8]string // header keys seen, reused as strings
	nkey int
	// aborted are the producers whose transactional batches are
	// skipped now (read_committed), and pending the aborted
	// transactions of the fetch not reached yet, by first offset.
	aborted map[int64]struct{}
	pending []kmsg.FetchResponseTopicPartitionAbortedTransaction
}

// newBatchDecoder returns a decoder that decompresses with dec, which
// must bound what a batch decompresses to (kgo.MaxDecompressBatchBytes).
func newBatchDecoder(dec kgo.Decompressor) *batchDecoder {
	return &batchDecoder{dec: dec, aborted: map[int64]struct{}{}}
}

// scanBatches returns the offset after the last batch that data holds
// whole (0, false when it holds none) and the length of the first
// batch (0 when data is too short to tell, or does not start with a
// record batch: decode says why): a fetch's bytes end with a part of a
// batch when the fetch size cut it.
func scanBatches(data []byte) (next int64, complete bool, firstLen int) {
	for len(data) > batchMagicAt && data[batchMagicAt] == 2 {
		size := int(int32(binary.BigEndian.Uint32(data[8:]))) + batchLengthAt
		if size < batchHeaderLen {
			break
		}
		if firstLen == 0 {
			firstLen = size
		}
		if size > len(data) {
			break
		}
		next = int64(binary.BigEndian.Uint64(data)) + int64(int32(binary.BigEndian.Uint32(data[23:]))) + 1
		complete = true
		data = data[size:]
	}
	return next, complete, firstLen
}

// begin readies the decoder for the batches of a new fetch, given its
// aborted transactions (read_committed).
func (d *batchDecoder) begin(aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	d.pending = append(d.pending[:0], aborted...)
	slices.SortFunc(d.pending, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	clear(d.aborted)
}

// decode hands fn every record of data's whole batches whose offset is
// from or later, in order, skipping control batches and the batches of
// the fetch's aborted transactions (begin). It stops after the batch
// that brings what it handed to limit records (0: no limit): the rest
// of the fetch is decoded by another call, from where this one stopped.
// m's fields other than Seq, Time, Key, Payload and Headers are left
// as they are. It returns how many records fn was given; the offset
// after the last one (from when none was), and the offset after the
// last whole batch (from when there is none): no record lies between
// them; and the bytes of data not decoded (after a stop, or a part of
// a batch at the end of data, left for the next fetch).
func (d *batchDecoder) decode(data []byte, from int64, limit int, m *transport.Message, fn func(*transport.Message)) (n int, after, next int64, rest []byte, err error) {
	next = from
	for len(data) > batchMagicAt && (limit == 0 || n < limit) {
		base := int64(binary.BigEndian.Uint64(data))
		if magic := data[batchMagicAt]; magic != 2 {
			// Read before the length: a message of the formats before
			// is shorter than a batch header.
			return n, from, next, nil, fmt.Errorf("%w at offset %d: message format v%d (magic %d); only record batches (v2, Kafka 0.11 and later) are read", ErrCorruptBatch, base, magic, magic)
		}
		size := int(int32(binary.BigEndian.Uint32(data[8:]))) + batchLengthAt
		if size < batchHeaderLen {
			return n, from, next, nil, fmt.Errorf("%w at offset %d: length %d", ErrCorruptBatch, base, size-batchLengthAt)
		}
		if size > len(data) {
			break // cut by the fetch size: fetched again from next
		}
		k, last, err := d.batch(data[:size], &from, m, fn)
		n += k
		if err != nil {
			return n, from, next, nil, err
		}
		next = max(next, last+1)
		data = data[size:]
	}
	return n, from, next, data, nil
}

// batch hands fn the records of one whole batch b at *from or later,
// moving *from past each: a record whose offset is not past the last
// one handed (a broker's mistake) is not handed. It returns the batch's
// last offset.
func (d *batchDecoder) batch(b []byte, fromp *int64, m *transport.Message, fn func(*transport.Message)) (n int, last int64, err error) {
	from := *fromp
	base := int64(binary.BigEndian.Uint64(b))
	if got, want := crc32.Checksum(b[21:], castagnoli), binary.BigEndian.Uint32(b[17:]); got != want {
		return 0, base, fmt.Errorf("%w at offset %d: CRC-32C %08x, the batch says %08x", ErrCorruptBatch, base, got, want)
	}
	attrs := binary.BigEndian.Uint16(b[21:])
	lastDelta := int64(int32(binary.BigEndian.Uint32(b[23:])))
	last = base + lastDelta
	if base < 0 || lastDelta < 0 || last < base {
		return 0, base, fmt.Errorf("%w at offset %d: last offset delta %d", ErrCorruptBatch, base, lastDelta)
	}
	baseTime := int64(binary.BigEndian.Uint64(b[27:]))
	maxTime := int64(binary.BigEndian.Uint64(b[35:]))
	producer := int64(binary.BigEndian.Uint64(b[43:]))
	count := int(int32(binary.BigEndian.Uint32(b[57:])))
	if count < 0 {
		return 0, last, fmt.Errorf("%w at offset %d: record count %d", ErrCorruptBatch, base, count)
	}
	records := b[batchHeaderLen:]
	if attrs&attrTransactional != 0 {
		for len(d.pending) > 0 && d.pending[0].FirstOffset <= last {
			d.aborted[d.pending[0].ProducerID] = struct{}{}
			d.pending = d.pending[1:]
		}
	}
	if attrs&attrControl != 0 {
		// A transaction marker: an abort ends the producer's aborted
		// transaction. Control records are never delivered.
		if _, ok := d.aborted[producer]; ok && isAbortMarker(records) {
			delete(d.aborted, producer)
		}
		return 0, last, nil
	}
	if _, ok := d.aborted[producer]; ok && attrs&attrTransactional != 0 || last < from {
		// Aborted, or all before what was asked for (after the
		// transactions' bookkeeping: a marker there ends one).
		return 0, last, nil
	}
	if codec := attrs & attrCodec; codec != 0 {
		if codec > 4 {
			return 0, last, fmt.Errorf("%w at offset %d: compression codec %d", ErrCorruptBatch, base, codec)
		}
		if records, err = d.dec.Decompress(records, kgo.CompressionCodecType(codec)); err != nil {
			return 0, last, fmt.Errorf("%w at offset %d: %w", ErrCorruptBatch, base, err)
		}
	}
	logTime := attrs&attrLogAppendTime != 0
	for i := range count {
		r, rest, ok := d.record(records, m)
		if !ok {
			return n, last, fmt.Errorf("%w at offset %d: record %d of %d cannot be read", ErrCorruptBatch, base, i, count)
		}
		records = rest
		if r.offsetDelta < 0 || r.offsetDelta > lastDelta { // base+delta may overflow

			return n, last, fmt.Errorf("%w at offset %d: record %d has offset delta %d, past the last %d", ErrCorruptBatch, base, i, r.offsetDelta, lastDelta)
		}
		off := base + r.offsetDelta
		if off < from {
			continue
		}
		ts := baseTime + r.timeDelta
		if logTime {
			ts = maxTime
		}
		m.Seq, m.Time = uint64(off), time.UnixMilli(ts)
		fn(m)
		n++
		from = off + 1
		*fromp = from
	}
	if len(records) != 0 {
		return n, last, fmt.Errorf("%w at offset %d: %d bytes after its %d records", ErrCorruptBatch, base, len(records), count)
	}
	return n, last, nil
}

// recordMeta is what a record holds besides what it sets in the message.
type recordMeta struct {
	timeDelta   int64
	offsetDelta int64
}

// record reads one record of b into m's Key, Payload and Headers; false
// when it cannot be read.
func (d *batchDecoder) record(b []byte, m *transport.Message) (r recordMeta, rest []byte, ok bool) {
	size, k := binary.Varint(b)
	if k <= 0 || size < 0 || size > int64(len(b)-k) {
		return r, nil, false
	}
	rest, b = b[k+int(size):], b[k:k+int(size)]
	if len(b) < 1 {
		return r, nil, false
	}
	b = b[1:] // attributes: unused
	if r.timeDelta, k = binary.Varint(b); k <= 0 {
		return r, nil, false
	}
	b = b[k:]
	if r.offsetDelta, k = binary.Varint(b); k <= 0 {
		return r, nil, false
	}
	b = b[k:]
	if m.Key, b, ok = varBytes(b); !ok {
		return r, nil, false
	}
	if m.Payload, b, ok = varBytes(b); !ok {
		return r, nil, false
	}
	nh, k := binary.Varint(b)
	if k <= 0 || nh < 0 || nh > int64(len(b)) { // a header takes 2 bytes at least
		return r, nil, false
	}
	b = b[k:]
	d.hdrs = d.hdrs[:0]
	for range nh {
		var key, val []byte
		if key, b, ok = varBytes(b); !ok || key == nil {
			return r, nil, false
		}
		if val, b, ok = varBytes(b); !ok {
			return r, nil, false
		}
		d.hdrs = append(d.hdrs, transport.Header{Key: d.key(key), Value: val})
	}
	if len(b) != 0 {
		return r, nil, false
	}
	m.Headers = nil
	if nh > 0 {
		m.Headers = d.hdrs
	}
	return r, rest, true
}

// varBytes reads a varint length and that many bytes (nil for -1).
func varBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Varint(b)
	switch {
	case k <= 0 || n < -1 || n > int64(len(b)-k):
		return nil, nil, false
	case n == -1:
		return nil, b[k:], true
	}
	return b[k : k+int(n) : k+int(n)], b[k+int(n):], true
}

// key returns b as a string, the same string for the keys it keeps: a
// log's records mostly repeat a few header keys.
func (d *batchDecoder) key(b []byte) string {
	for _, s := range d.keys[:min(d.nkey, len(d.keys))] {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	d.keys[d.nkey%len(d.keys)] = s
	d.nkey++
	return s
}

// isAbortMarker reports whether the records of a control batch are an
// abort marker: a record whose key is version int16, type int16 = 0.
func isAbortMarker(records []byte) bool {
	var d batchDecoder
	var m transport.Message
	_, _, ok := d.record(records, &m)
	return ok && len(m.Key) >= 4 && binary.BigEndian.Uint16(m.Key[2:]) == 0
}
