package storage

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// forEachRecord decodes the records of a batch (decompressing them into
// scratch, which it returns for reuse) and calls fn with each; the
// record aliases the batch or scratch. fn returning false stops the
// walk.
func forEachRecord(h *kmsg.RecordBatch, scratch []byte, fn func(r *kmsg.Record) bool) ([]byte, error) {
	recs := h.Records
	if codec := int(h.Attributes & attrCodecMask); codec != codecNone {
		var err error
		if scratch, err = decompress(scratch[:0], recs, codec); err != nil {
			return scratch, &BatchError{ErrCorruptBatch, "decompressing records: " + err.Error()}
		}
		recs = scratch
	}
	var r kmsg.Record
	for n := int32(0); n < h.NumRecords; n++ {
		l, k := binary.Varint(recs)
		if k <= 0 || l < 0 || l > int64(len(recs)-k) {
			return scratch, errRecordsFrame
		}
		if err := r.UnsafeReadFrom(recs[:k+int(l)]); err != nil {
			return scratch, errRecordsFrame
		}
		recs = recs[k+int(l):]
		if !fn(&r) {
			break
		}
	}
	return scratch, nil
}

// appendRecord encodes r after dst with its length prefix computed.
func appendRecord(dst []byte, r *kmsg.Record) []byte {
	r.Length = 0
	start := len(dst)
	dst = r.AppendTo(dst) // a one-byte zero length, then the body
	body := len(dst) - start - 1
	var lb [binary.MaxVarintLen32]byte
	k := binary.PutVarint(lb[:], int64(body))
	dst = append(dst, lb[:k-1]...)
	copy(dst[start+k:], dst[start+1:start+1+body])
	copy(dst[start:], lb[:k])
	return dst
}

// buildBatch encodes a RecordBatch v2 from its header fields and an
// uncompressed records section, compressing the records with the
// header's codec and computing the length and CRC.
func buildBatch(dst []byte, h *kmsg.RecordBatch, records []byte) ([]byte, error) {
	recs, err := compress(nil, records, int(h.Attributes&attrCodecMask))
	if err != nil {
		return nil, err
	}
	b := *h
	b.Magic = 2
	b.Records = recs
	b.Length = int32(batchHeaderLen - batchLogOverhead + len(recs))
	start := len(dst)
	dst = b.AppendTo(dst)
	crc := crc32Castagnoli(dst[start+batchCRCStart:])
	binary.BigEndian.PutUint32(dst[start+batchCRCPos:], crc)
	return dst, nil
}
