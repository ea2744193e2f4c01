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
// CRC that does not match, a length or count that disagrees with its
// bytes, an unknown message format (magic past 2), a compression codec
// that is unknown or fails, a batch that decompresses past the bound.
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

// legacyLen is the least length of a message of the formats before
// record batches, magic 0 and 1 (Kafka before 0.11, whose data a broker
// may still hold and answer as it is): offset int64, size int32, CRC
// uint32, magic int8, attributes int8, a timestamp int64 from magic 1,
// key and value lengths int32.
var legacyLen = [2]int{26, 34}

// minLen is the least length of an entry of magic magic (2: a batch).
func minLen(magic byte) int {
	if magic < 2 {
		return legacyLen[magic]
	}
	return batchHeaderLen
}

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
	// legacyMsgs are the messages of a compressed message of the
	// formats before record batches, reused.
	legacyMsgs []legacyMessage
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
	for len(data) > batchMagicAt && data[batchMagicAt] <= 2 {
		size := int(int32(binary.BigEndian.Uint32(data[8:]))) + batchLengthAt
		if size < minLen(data[batchMagicAt]) {
			break
		}
		if firstLen == 0 {
			firstLen = size
		}
		if size > len(data) {
			break
		}
		next = int64(binary.BigEndian.Uint64(data)) + 1 // a compressed message's offset is its last one's
		if data[batchMagicAt] == 2 {
			next += int64(int32(binary.BigEndian.Uint32(data[23:])))
		}
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

// decode hands fn every record of data's whole batches (record batches,
// or messages of the formats before, legacy) whose offset is from or
// later, in order, skipping control batches and the batches of the
// fetch's aborted transactions (begin). It stops after the batch
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
		magic := data[batchMagicAt]
		if magic > 2 {
			return n, from, next, nil, fmt.Errorf("%w at offset %d: unknown message format (magic %d)", ErrCorruptBatch, base, magic)
		}
		size := int(int32(binary.BigEndian.Uint32(data[8:]))) + batchLengthAt
		if size < minLen(magic) {
			return n, from, next, nil, fmt.Errorf("%w at offset %d: length %d (magic %d)", ErrCorruptBatch, base, size-batchLengthAt, magic)
		}
		if size > len(data) {
			break // cut by the fetch size: fetched again from next
		}
		var k int
		var last int64
		if magic < 2 {
			k, last, err = d.legacy(data[:size], &from, m, fn)
		} else {
			k, last, err = d.batch(data[:size], &from, m, fn)
		}
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

// legacyMessage is a message of the formats before record batches.
type legacyMessage struct {
	offset     int64
	magic      byte
	attrs      byte
	time       int64 // magic 1 only
	key, value []byte
}

// parseLegacy reads the whole message b (magic 0 or 1).
func parseLegacy(b []byte) (lm legacyMessage, err error) {
	lm.offset = int64(binary.BigEndian.Uint64(b))
	if len(b) < batchMagicAt+1 || b[batchMagicAt] > 1 || len(b) < legacyLen[b[batchMagicAt]] {
		return lm, fmt.Errorf("%w at offset %d: a message of %d bytes", ErrCorruptBatch, lm.offset, len(b))
	}
	if got, want := crc32.ChecksumIEEE(b[batchMagicAt:]), binary.BigEndian.Uint32(b[12:]); got != want {
		return lm, fmt.Errorf("%w at offset %d: CRC-32 %08x, the message says %08x", ErrCorruptBatch, lm.offset, got, want)
	}
	lm.magic, lm.attrs = b[batchMagicAt], b[batchMagicAt+1]
	b = b[batchMagicAt+2:]
	if lm.magic == 1 {
		lm.time, b = int64(binary.BigEndian.Uint64(b)), b[8:]
	}
	var ok bool
	if lm.key, b, ok = legacyBytes(b); ok {
		lm.value, b, ok = legacyBytes(b)
	}
	if !ok || len(b) != 0 {
		return lm, fmt.Errorf("%w at offset %d: a message whose key or value length disagrees with its size", ErrCorruptBatch, lm.offset)
	}
	return lm, nil
}

// legacyBytes reads an int32 length and that many bytes (nil for -1).
func legacyBytes(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := int64(int32(binary.BigEndian.Uint32(b)))
	switch {
	case n < -1 || n > int64(len(b)-4):
		return nil, nil, false
	case n == -1:
		return nil, b[4:], true
	}
	return b[4 : 4+n : 4+n], b[4+n:], true
}

// legacy hands fn the messages of one whole message b of the formats
// before record batches (magic 0 or 1) at *from or later, moving *from
// past each, as kgo's consumer reads them: a compressed message holds a
// message set, whose offsets are absolute in magic 0 and relative in
// magic 1 (the wrapper's offset is its last message's; 0 there means
// they are absolute). It returns the last offset.
func (d *batchDecoder) legacy(b []byte, fromp *int64, m *transport.Message, fn func(*transport.Message)) (n int, last int64, err error) {
	w, err := parseLegacy(b)
	if err != nil {
		return 0, w.offset, err
	}
	codec := w.attrs & attrCodec
	if codec == 0 {
		return d.handLegacy(w, w, fromp, m, fn), w.offset, nil
	}
	if codec > 3 {
		return 0, w.offset, fmt.Errorf("%w at offset %d: compression codec %d in message format v%d", ErrCorruptBatch, w.offset, codec, w.magic)
	}
	inner, err := d.dec.Decompress(w.value, kgo.CompressionCodecType(codec))
	if err != nil {
		return 0, w.offset, fmt.Errorf("%w at offset %d: %w", ErrCorruptBatch, w.offset, err)
	}
	msgs := d.legacyMsgs[:0]
	for len(inner) > 0 {
		size := 0
		if len(inner) >= batchLengthAt {
			size = int(int32(binary.BigEndian.Uint32(inner[8:]))) + batchLengthAt
		}
		if size < batchLengthAt || size > len(inner) {
			return 0, w.offset, fmt.Errorf("%w at offset %d: a compressed message set cut", ErrCorruptBatch, w.offset)
		}
		lm, err := parseLegacy(inner[:size])
		if err != nil {
			return 0, w.offset, err
		}
		if lm.attrs&attrCodec != 0 {
			return 0, w.offset, fmt.Errorf("%w at offset %d: a compressed message inside a compressed one", ErrCorruptBatch, w.offset)
		}
		msgs = append(msgs, lm)
		inner = inner[size:]
	}
	d.legacyMsgs = msgs
	var base int64
	if w.magic == 1 && w.offset != 0 && len(msgs) > 0 {
		lastInner := msgs[len(msgs)-1].offset
		if w.offset < lastInner {
			return 0, w.offset, fmt.Errorf("%w at offset %d: the last message of the compressed set is at %d", ErrCorruptBatch, w.offset, lastInner)
		}
		base = w.offset - lastInner
	}
	last = w.offset
	for _, lm := range msgs {
		lm.offset += base
		last = max(last, lm.offset)
		n += d.handLegacy(w, lm, fromp, m, fn)
	}
	return n, last, nil
}

// handLegacy hands fn message lm of wrapper w (lm itself when not
// compressed) if it is at *from or later; 1 if it did.
func (d *batchDecoder) handLegacy(w, lm legacyMessage, fromp *int64, m *transport.Message, fn func(*transport.Message)) int {
	if lm.offset < *fromp {
		return 0
	}
	m.Seq, m.Key, m.Payload, m.Headers = uint64(lm.offset), lm.key, lm.value, nil
	switch {
	case lm.magic == 0:
		m.Time = time.Time{} // magic 0 has no timestamp
	case w.attrs&attrLogAppendTime != 0:
		m.Time = time.UnixMilli(w.time) // the broker's, on the wrapper
	default:
		m.Time = time.UnixMilli(lm.time)
	}
	fn(m)
	*fromp = lm.offset + 1
	return 1
}
