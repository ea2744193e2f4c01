package storage

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// Positions of header fields the log reads from stored batches without
// decoding them (kmsg.RecordBatch field order).
const (
	batchMaxTsPos    = 35
	batchProducerPos = 43
	batchEpochPos    = 51
	batchFirstSeqPos = 53
)

// storedHeader is what recovery, producer-state replay and timestamp
// lookups need of a stored batch.
type storedHeader struct {
	peek
	maxTs      int64
	producerID int64
	epoch      int16
	firstSeq   int32
}

func readStoredHeader(b []byte) storedHeader {
	p, _ := peekBatch(b)
	return storedHeader{
		peek:       p,
		maxTs:      int64(binary.BigEndian.Uint64(b[batchMaxTsPos:])),
		producerID: int64(binary.BigEndian.Uint64(b[batchProducerPos:])),
		epoch:      int16(binary.BigEndian.Uint16(b[batchEpochPos:])),
		firstSeq:   int32(binary.BigEndian.Uint32(b[batchFirstSeqPos:])),
	}
}

// errTorn: the bytes left cannot hold the batch they start.
var errTorn = errors.New("torn batch")

// scanBufBytes is how much a scanner given no buffer reads at once.
const scanBufBytes = 1 << 20

// A scanner walks the batches of a segment file from a position, reading
// in large chunks. With full set it returns whole batches (reading a
// batch larger than its buffer into a buffer of its own), otherwise at
// least the batch header.
type scanner struct {
	f      vfs.File
	pos    int64 // next batch
	limit  int64 // end of the bytes to scan
	full   bool
	buf    []byte
	bufPos int64 // file position of buf[0]
	big    []byte
}

func newScanner(f vfs.File, pos, limit int64, full bool, buf []byte) *scanner {
	if cap(buf) < batchHeaderLen {
		buf = make([]byte, 0, scanBufBytes)
	}
	return &scanner{f: f, pos: pos, limit: limit, full: full, buf: buf[:0], bufPos: pos}
}

// next returns the batch at s.pos and advances past it: io.EOF at the
// limit, errTorn when the rest cannot hold a batch, errLength for a
// length field outside [49, 64 MiB], or a read error.
func (s *scanner) next() (pos int64, b []byte, err error) {
	pos = s.pos
	if pos >= s.limit {
		return pos, nil, io.EOF
	}
	if s.limit-pos < batchHeaderLen {
		return pos, nil, errTorn
	}
	hdr, err := s.window(pos, batchHeaderLen)
	if err != nil {
		return pos, nil, err
	}
	p, _ := peekBatch(hdr)
	if p.size < batchHeaderLen || p.size > MaxBatchBytes {
		return pos, nil, errLength
	}
	if pos+p.size > s.limit {
		return pos, nil, errTorn
	}
	s.pos = pos + p.size
	if !s.full {
		return pos, hdr, nil
	}
	if p.size > int64(cap(s.buf)) {
		if int64(cap(s.big)) < p.size {
			s.big = make([]byte, p.size)
		}
		b = s.big[:p.size]
		if _, err := s.f.ReadAt(b, pos); err != nil {
			return pos, nil, err
		}
		return pos, b, nil
	}
	b, err = s.window(pos, int(p.size))
	return pos, b, err
}

// window returns file bytes [pos, pos+n) from the buffer, refilling it
// from pos when they are not all there. n ≤ cap(buf).
func (s *scanner) window(pos int64, n int) ([]byte, error) {
	if pos >= s.bufPos && pos+int64(n) <= s.bufPos+int64(len(s.buf)) {
		off := pos - s.bufPos
		return s.buf[off : off+int64(n)], nil
	}
	m := min(int64(cap(s.buf)), s.limit-pos)
	s.buf = s.buf[:m]
	s.bufPos = pos
	k, err := s.f.ReadAt(s.buf, pos)
	s.buf = s.buf[:k]
	if k < n {
		if err == nil || err == io.EOF {
			err = errTorn
		}
		return nil, err
	}
	return s.buf[:n], nil
}
