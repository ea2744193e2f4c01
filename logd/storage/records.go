package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordHead is what a walk of a batch's records decodes of each
// record without keeping it.
type recordHead struct {
	timestampDelta int64
	offsetDelta    int32
	keyless        bool
}

// forEachRecord decodes the records of a batch and calls fn with each;
// the record aliases the batch or scratch, which it returns for reuse.
// Compressed records are decompressed as a stream: scratch holds one
// record at a time. fn returning false stops the walk.
func forEachRecord(h *kmsg.RecordBatch, scratch []byte, fn func(r *kmsg.Record) bool) ([]byte, error) {
	var r kmsg.Record
	if int(h.Attributes&attrCodecMask) == codecNone {
		recs := h.Records
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
	in, err := openInflater(h.Records, int(h.Attributes&attrCodecMask))
	if err != nil {
		return scratch, inflateError(err)
	}
	defer in.release()
	for n := int32(0); n < h.NumRecords; n++ {
		l, err := binary.ReadVarint(in.br)
		if err != nil {
			return scratch, inflateError(err)
		}
		if l < 0 || l > maxDecompressed {
			return scratch, errRecordsFrame
		}
		if scratch, err = readRecord(in.br, scratch, l); err != nil {
			return scratch, inflateError(err)
		}
		if err := r.UnsafeReadFrom(scratch); err != nil {
			return scratch, errRecordsFrame
		}
		if !fn(&r) {
			break
		}
	}
	return scratch, nil
}

// readRecord reads a record of l bytes into scratch, after its length
// prefix. It grows scratch as the bytes come, so a length the stream
// does not hold allocates little.
func readRecord(br *bufio.Reader, scratch []byte, l int64) ([]byte, error) {
	scratch = binary.AppendVarint(scratch[:0], l)
	for l > 0 {
		n := int(min(l, 1<<20))
		at := len(scratch)
		scratch = slices.Grow(scratch, n)[:at+n]
		if _, err := io.ReadFull(br, scratch[at:]); err != nil {
			return scratch, err
		}
		l -= int64(n)
	}
	return scratch, nil
}

// forEachHead walks the records of a batch, checking each is exactly
// one well-formed record, and calls fn with what it decoded of it. It
// keeps nothing of the records: compressed ones are streamed through
// a small buffer. fn returning false stops the walk.
func forEachHead(h *kmsg.RecordBatch, fn func(recordHead) bool) error {
	if int(h.Attributes&attrCodecMask) == codecNone {
		recs := h.Records
		for n := int32(0); n < h.NumRecords; n++ {
			l, k := binary.Varint(recs)
			if k <= 0 || l < 0 || l > int64(len(recs)-k) {
				return errRecordsFrame
			}
			rh, ok := parseRecord(recs[k : k+int(l)])
			if !ok {
				return errBadRecord
			}
			recs = recs[k+int(l):]
			if !fn(rh) {
				break
			}
		}
		return nil
	}
	in, err := openInflater(h.Records, int(h.Attributes&attrCodecMask))
	if err != nil {
		return inflateError(err)
	}
	defer in.release()
	st := recordStream{br: in.br}
	for n := int32(0); n < h.NumRecords; n++ {
		rh, err := st.next()
		if err != nil {
			return err
		}
		if !fn(rh) {
			break
		}
	}
	return nil
}

// inflateError makes an error of decompressing records a *BatchError.
func inflateError(err error) error {
	var be *BatchError
	switch {
	case errors.As(err, &be):
		return err
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return errRecordsShort
	}
	return &BatchError{ErrCorruptBatch, "decompressing records: " + err.Error()}
}

// parseRecord checks that b, a record without its length prefix, is
// exactly one record — attributes, timestamp and offset deltas, key,
// value, headers — as Kafka's DefaultRecord.readFrom reads it, and
// returns its head. It does not allocate.
func parseRecord(b []byte) (rh recordHead, ok bool) {
	if len(b) < 1 {
		return rh, false
	}
	b = b[1:] // attributes: unused
	ts, k := binary.Varint(b)
	if k <= 0 {
		return rh, false
	}
	b = b[k:]
	od, k := binary.Varint(b)
	if k <= 0 || od != int64(int32(od)) {
		return rh, false
	}
	b = b[k:]
	keyLen := int64(0)
	if b, keyLen, ok = skipBytes(b, -1); !ok {
		return rh, false
	}
	if b, _, ok = skipBytes(b, -1); !ok { // value
		return rh, false
	}
	nh, k := binary.Varint(b)
	if k <= 0 || nh < 0 || nh > int64(len(b)) {
		return rh, false
	}
	b = b[k:]
	for range nh {
		if b, _, ok = skipBytes(b, 0); !ok { // header key: never null
			return rh, false
		}
		if b, _, ok = skipBytes(b, -1); !ok {
			return rh, false
		}
	}
	return recordHead{timestampDelta: ts, offsetDelta: int32(od), keyless: keyLen < 0}, len(b) == 0
}

// skipBytes steps over a varint length (at least minLen; -1 is null)
// and that many bytes.
func skipBytes(b []byte, minLen int64) ([]byte, int64, bool) {
	l, k := binary.Varint(b)
	if k <= 0 || l < minLen || l > int64(len(b)-k) {
		return b, l, false
	}
	return b[k+max(0, int(l)):], l, true
}

// recordStream parses records from a stream of decompressed records as
// parseRecord does, reading values and keys past without keeping them.
type recordStream struct {
	br   *bufio.Reader
	left int64 // bytes of the current record not yet read
}

// next parses the next record.
func (s *recordStream) next() (recordHead, error) {
	var rh recordHead
	l, err := binary.ReadVarint(s.br)
	if err != nil {
		return rh, inflateError(err)
	}
	if l < 1 {
		return rh, errBadRecord
	}
	s.left = l
	if err := s.skip(1); err != nil { // attributes
		return rh, err
	}
	if rh.timestampDelta, err = s.varint(); err != nil {
		return rh, err
	}
	od, err := s.varint()
	if err != nil {
		return rh, err
	}
	if od != int64(int32(od)) {
		return rh, errBadRecord
	}
	rh.offsetDelta = int32(od)
	keyLen, err := s.skipBytes(-1)
	if err != nil {
		return rh, err
	}
	rh.keyless = keyLen < 0
	if _, err := s.skipBytes(-1); err != nil { // value
		return rh, err
	}
	nh, err := s.varint()
	if err != nil {
		return rh, err
	}
	if nh < 0 || nh > s.left {
		return rh, errBadRecord
	}
	for range nh {
		if _, err := s.skipBytes(0); err != nil {
			return rh, err
		}
		if _, err := s.skipBytes(-1); err != nil {
			return rh, err
		}
	}
	if s.left != 0 {
		return rh, errBadRecord
	}
	return rh, nil
}

// varint reads a varint of the current record.
func (s *recordStream) varint() (int64, error) {
	var ux uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if s.left <= 0 {
			return 0, errBadRecord
		}
		c, err := s.br.ReadByte()
		if err != nil {
			return 0, inflateError(err)
		}
		s.left--
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errBadRecord
			}
			ux |= uint64(c) << (7 * i)
			x := int64(ux >> 1)
			if ux&1 != 0 {
				x = ^x
			}
			return x, nil
		}
		ux |= uint64(c&0x7f) << (7 * i)
	}
	return 0, errBadRecord
}

// skip reads n bytes of the current record past.
func (s *recordStream) skip(n int64) error {
	if n > s.left {
		return errBadRecord
	}
	s.left -= n
	for n > 0 {
		k, err := s.br.Discard(int(min(n, 1<<30)))
		n -= int64(k)
		if err != nil {
			return inflateError(err)
		}
	}
	return nil
}

// skipBytes reads a varint length (at least minLen; -1 is null) and
// that many bytes past.
func (s *recordStream) skipBytes(minLen int64) (int64, error) {
	l, err := s.varint()
	if err != nil {
		return 0, err
	}
	if l < minLen {
		return 0, errBadRecord
	}
	return l, s.skip(max(0, l))
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
