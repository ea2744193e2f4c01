package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs: the low three bits of a batch's attributes.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// maxDecompressed bounds the records section of one batch once
// decompressed: a produced batch that inflates past it is refused, and a
// stored one is read no further. Records are decompressed as a stream
// through a small buffer, so the bound is on work, not on memory.
const maxDecompressed = 64 << 20

// maxZstdWindow bounds the history a zstd frame may ask its decoder to
// keep (zstd's default levels use 8 MiB at most).
const maxZstdWindow = 8 << 20

var errDecompressedTooLarge = &BatchError{ErrCorruptBatch, fmt.Sprintf("records decompress to over %d bytes", maxDecompressed)}

// xerialMagic starts snappy data framed the way Java's snappy-java
// writes it (Kafka's Java producer); other clients send raw snappy
// blocks.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var zstdEnc = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
})

// inflater decompresses one batch's records as a stream. Inflaters are
// pooled, each with its own decoders, so no request waits for another's.
type inflater struct {
	src     bytes.Reader
	gz      *gzip.Reader
	lz      *lz4.Reader
	zs      *zstd.Decoder
	snappy  snappyReader
	bounded boundedReader
	br      *bufio.Reader
}

// inflaterBufBytes is the read buffer of an inflater: all it keeps of
// the decompressed records at a time (bar one record, when a caller
// asks for whole records).
const inflaterBufBytes = 4 << 10

var inflaters = sync.Pool{New: func() any { return &inflater{br: bufio.NewReaderSize(nil, inflaterBufBytes)} }}

// openInflater returns a pooled inflater reading the decompressed form
// of src, compressed with codec, through in.br; the caller must release
// it.
func openInflater(src []byte, codec int) (*inflater, error) {
	in := inflaters.Get().(*inflater)
	in.src.Reset(src)
	var r io.Reader
	var err error
	switch codec {
	case codecNone:
		r = &in.src
	case codecGzip:
		if in.gz == nil {
			in.gz, err = gzip.NewReader(&in.src)
		} else {
			err = in.gz.Reset(&in.src)
		}
		r = in.gz
	case codecSnappy:
		err = in.snappy.reset(src)
		r = &in.snappy
	case codecLZ4:
		if in.lz == nil {
			in.lz = lz4.NewReader(&in.src)
		} else {
			in.lz.Reset(&in.src)
		}
		r = in.lz
	case codecZstd:
		if in.zs == nil {
			in.zs, err = zstd.NewReader(&in.src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxDecompressed))
		} else {
			err = in.zs.Reset(&in.src)
		}
		r = in.zs
	default:
		err = errCodec
	}
	if err != nil {
		in.release()
		return nil, err
	}
	in.bounded = boundedReader{r: r, left: maxDecompressed}
	in.br.Reset(&in.bounded)
	return in, nil
}

// release returns in to the pool, dropping its references to the batch.
func (in *inflater) release() {
	in.src.Reset(nil)
	in.snappy.release()
	in.bounded = boundedReader{}
	in.br.Reset(nil)
	inflaters.Put(in)
}

// boundedReader reads r up to left bytes; asked for more while r has
// more, it fails with errDecompressedTooLarge.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		for {
			n, err := b.r.Read(one[:])
			if n > 0 {
				return 0, errDecompressedTooLarge
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// snappyReader reads a raw snappy block, or snappy-java's framing (the
// 8-byte magic, two 4-byte version fields, then chunks of a 4-byte
// big-endian length and a raw block), one block at a time. A raw block
// can only be decoded whole: its decoded length (which its header
// states) must be within maxDecompressed.
type snappyReader struct {
	src    []byte // blocks not yet decoded (xerial: chunks)
	xerial bool
	out    []byte // the decoded block
	pos    int
}

// snappyKeepBytes is the largest decoded block buffer kept for reuse.
const snappyKeepBytes = 1 << 20

func (s *snappyReader) reset(src []byte) error {
	s.src, s.xerial, s.out, s.pos = src, false, s.out[:0], 0
	if bytes.HasPrefix(src, xerialMagic) {
		if len(src) < 16 {
			return errors.New("short xerial snappy header")
		}
		s.src, s.xerial = src[16:], true
	}
	return nil
}

func (s *snappyReader) release() {
	if cap(s.out) > snappyKeepBytes {
		s.out = nil
	}
	s.src, s.out, s.pos = nil, s.out[:0], 0
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for s.pos == len(s.out) {
		if len(s.src) == 0 {
			return 0, io.EOF
		}
		block := s.src
		if s.xerial {
			if len(s.src) < 4 {
				return 0, errors.New("short xerial snappy chunk")
			}
			n := binary.BigEndian.Uint32(s.src)
			if uint64(n) > uint64(len(s.src)-4) {
				return 0, errors.New("xerial snappy chunk past the end")
			}
			block = s.src[4 : 4+n]
			s.src = s.src[4+n:]
		} else {
			s.src = nil
		}
		n, err := s2.DecodedLen(block)
		if err != nil {
			return 0, err
		}
		if n > maxDecompressed {
			return 0, errDecompressedTooLarge
		}
		if cap(s.out) < n {
			s.out = make([]byte, n)
		}
		if s.out, err = s2.Decode(s.out[:n], block); err != nil {
			return 0, err
		}
		s.pos = 0
	}
	n := copy(p, s.out[s.pos:])
	s.pos += n
	return n, nil
}

// compress compresses a records section with codec, appended to dst.
// Snappy is written as a raw block, which every client reads.
func compress(dst, src []byte, codec int) ([]byte, error) {
	switch codec {
	case codecNone:
		return append(dst, src...), nil
	case codecGzip:
		buf := bytes.NewBuffer(dst)
		w := gzip.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case codecSnappy:
		return append(dst, s2.EncodeSnappy(nil, src)...), nil
	case codecLZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case codecZstd:
		e, err := zstdEnc()
		if err != nil {
			return nil, err
		}
		return e.EncodeAll(src, dst), nil
	}
	return nil, errCodec
}
