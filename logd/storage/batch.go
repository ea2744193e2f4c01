package storage

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Byte positions in a RecordBatch v2 (the fields are kmsg.RecordBatch's,
// in wire order). The log rewrites the base offset in place and reads a
// few fields of stored batches without decoding the rest.
const (
	batchLogOverhead = 12 // base offset (8) + length (4): bytes not counted by the length field
	batchMagicPos    = 16
	batchCRCPos      = 17
	batchCRCStart    = 21 // attributes: the CRC covers from here to the end
	batchLastDeltaAt = 23
	batchHeaderLen   = 61 // up to and including the record count
	// batchPeekLen covers base offset, length and last offset delta: all
	// a scan needs to step over a batch and know its offsets.
	batchPeekLen = 27
)

// Batch attribute bits.
const (
	attrCodecMask     = 0x07
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// peek is what a scan reads from the first batchPeekLen bytes of a
// stored batch.
type peek struct {
	base      int64
	size      int64 // whole batch, log overhead included
	lastDelta int32
}

func (p peek) last() int64 { return p.base + int64(p.lastDelta) }

// peekBatch decodes the start of a batch; ok is false if b is too short.
// It checks nothing else: a scan validates the batch when it reads it.
func peekBatch(b []byte) (p peek, ok bool) {
	if len(b) < batchPeekLen {
		return p, false
	}
	return peek{
		base:      int64(binary.BigEndian.Uint64(b)),
		size:      int64(int32(binary.BigEndian.Uint32(b[8:]))) + batchLogOverhead,
		lastDelta: int32(binary.BigEndian.Uint32(b[batchLastDeltaAt:])),
	}, true
}

// checkFrame validates that b is exactly one RecordBatch v2: header
// length, length field, magic and CRC-32C. The partition leader epoch
// is never looked at (franz-go #1229).
func checkFrame(b []byte) error {
	if len(b) < batchHeaderLen {
		return errShort
	}
	if int64(int32(binary.BigEndian.Uint32(b[8:])))+batchLogOverhead != int64(len(b)) {
		return errLength
	}
	if b[batchMagicPos] != 2 {
		return errMagic
	}
	if crc32.Checksum(b[batchCRCStart:], castagnoli) != binary.BigEndian.Uint32(b[batchCRCPos:]) {
		return errCRC
	}
	return nil
}

// decodeHeader validates b as one stored batch and decodes its header
// into h; h.Records aliases b.
func decodeHeader(b []byte, h *kmsg.RecordBatch) error {
	if err := checkFrame(b); err != nil {
		return err
	}
	if err := h.UnsafeReadFrom(b); err != nil {
		return errShort
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
		return errCount
	}
	return nil
}

// checkProduced validates a batch as a producer sent it, beyond what
// decodeHeader checks: at least one record, offsets deltas 0..n-1, a
// known codec, not transactional, a sequence ≥ 0 with a producer ID, and that its records section is
// exactly NumRecords well-formed records (decompressed as a stream, at
// most maxDecompressed bytes, for a compressed batch), as Kafka's
// LogValidator reads every record. With needKeys (a compacted topic)
// every record must have a key, else the batch is refused with a
// *RecordsError naming the keyless records.
//
// As Kafka's LogValidator does, it then sets the batch's MaxTimestamp to
// its records' largest timestamp and its timestamp type to CreateTime
// (b and h are rewritten, with the CRC, when the producer's differ): the
// log's time index, ListOffsets by time and time-based retention go by
// MaxTimestamp, so a producer's understated one would hide its records
// from a lookup by time and let retention delete them early.
func checkProduced(b []byte, h *kmsg.RecordBatch, maxBytes int, needKeys bool) error {
	if len(b) > maxBytes {
		return errTooLarge
	}
	if err := decodeHeader(b, h); err != nil {
		return err
	}
	switch {
	case h.NumRecords < 1:
		return errNoRecords
	case h.LastOffsetDelta != h.NumRecords-1:
		return errCount
	case h.Attributes&(attrTransactional|attrControl) != 0:
		return errTxn
	case h.Attributes&attrCodecMask > codecZstd:
		return errCodec
	case h.ProducerID >= 0 && h.FirstSequence < 0:
		return errSequence
	}
	keys := keyCheck{on: needKeys, maxDelta: math.MinInt64}
	var err error
	if h.Attributes&attrCodecMask == codecNone {
		err = validateRecords(h.Records, h.NumRecords, &keys)
	} else {
		err = validateCompressedRecords(h, &keys)
	}
	if err != nil {
		return err
	}
	if err := keys.err(); err != nil {
		return err
	}
	setMaxTimestamp(b, h, h.FirstTimestamp+keys.maxDelta)
	return nil
}

// setMaxTimestamp makes ts the batch's MaxTimestamp and CreateTime its
// timestamp type, in b (with its CRC) and h, unless they are already.
func setMaxTimestamp(b []byte, h *kmsg.RecordBatch, ts int64) {
	if h.MaxTimestamp == ts && h.Attributes&attrLogAppendTime == 0 {
		return
	}
	h.MaxTimestamp = ts
	h.Attributes &^= attrLogAppendTime
	binary.BigEndian.PutUint16(b[batchCRCStart:], uint16(h.Attributes))
	binary.BigEndian.PutUint64(b[batchMaxTsPos:], uint64(ts))
	binary.BigEndian.PutUint32(b[batchCRCPos:], crc32.Checksum(b[batchCRCStart:], castagnoli))
}

// keyCheck collects the records without a key of a batch for a
// compacted topic (when on), as Kafka's LogValidator.validateKey does,
// and the largest timestamp delta of its records.
type keyCheck struct {
	on       bool
	keyless  []int32
	maxDelta int64
}

func (k *keyCheck) note(i int32, rh recordHead) {
	if k.on && rh.keyless {
		k.keyless = append(k.keyless, i)
	}
	k.maxDelta = max(k.maxDelta, rh.timestampDelta)
}

func (k *keyCheck) err() error {
	if len(k.keyless) == 0 {
		return nil
	}
	return &RecordsError{Records: k.keyless, Reason: reasonKeyless}
}

// validateRecords checks, in one pass that does not allocate (but for
// keys' list of keyless records), that the uncompressed records section
// b is exactly n well-formed records whose offset deltas are 0..n-1.
func validateRecords(b []byte, n int32, keys *keyCheck) error {
	i := int32(0)
	for ; len(b) > 0; i++ {
		l, k := binary.Varint(b)
		if k <= 0 || l < 0 || l > int64(len(b)-k) || i == n {
			return errRecordsFrame
		}
		rh, ok := parseRecord(b[k : k+int(l)])
		if !ok {
			return errBadRecord
		}
		if rh.offsetDelta != i {
			return errRecordOffset
		}
		keys.note(i, rh)
		b = b[k+int(l):]
	}
	if i != n {
		return errRecordsFrame
	}
	return nil
}

// validateCompressedRecords is validateRecords for a compressed batch: its
// records are decompressed as a stream and kept no further than a small
// buffer; bytes past the last record are refused.
func validateCompressedRecords(h *kmsg.RecordBatch, keys *keyCheck) error {
	in, err := openInflater(h.Records, int(h.Attributes&attrCodecMask))
	if err != nil {
		return inflateError(err)
	}
	defer in.release()
	st := recordStream{br: in.br}
	for i := int32(0); i < h.NumRecords; i++ {
		rh, err := st.next()
		if err != nil {
			return err
		}
		if rh.offsetDelta != i {
			return errRecordOffset
		}
		keys.note(i, rh)
	}
	if _, err := in.br.ReadByte(); err != io.EOF {
		if err == nil {
			return errRecordsFrame
		}
		return inflateError(err)
	}
	return nil
}

// setBaseOffset rewrites a batch's base offset; the CRC does not cover
// it.
func setBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b, uint64(off)) }
