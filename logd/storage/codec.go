package storage

import (
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
// decompressed, so a compression bomb cannot exhaust memory.
const maxDecompressed = 256 << 20

var errDecompressedTooLarge = fmt.Errorf("decompressed records over %d bytes", maxDecompressed)

// xerialMagic starts snappy data framed the way Java's snappy-java
// writes it (Kafka's Java producer); other clients send raw snappy
// blocks.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var zstdDec = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed))
})

var zstdEnc = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
})

// decompress returns the records section of a batch compressed with
// codec, appended to dst.
func decompress(dst, src []byte, codec int) ([]byte, error) {
	switch codec {
	case codecNone:
		return append(dst, src...), nil
	case codecGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readLimited(dst, r)
	case codecSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return unxerial(dst, src)
		}
		return snappyBlock(dst, src)
	case codecLZ4:
		return readLimited(dst, lz4.NewReader(bytes.NewReader(src)))
	case codecZstd:
		d, err := zstdDec()
		if err != nil {
			return nil, err
		}
		return d.DecodeAll(src, dst)
	}
	return nil, errCodec
}

func readLimited(dst []byte, r io.Reader) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed {
		return nil, errDecompressedTooLarge
	}
	return buf.Bytes(), nil
}

func snappyBlock(dst, src []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed-len(dst) {
		return nil, errDecompressedTooLarge
	}
	out, err := s2.Decode(make([]byte, n), src)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}

// unxerial decodes snappy-java framing: the 8-byte magic, two 4-byte
// version fields, then chunks of a 4-byte big-endian length and a raw
// snappy block.
func unxerial(dst, src []byte) ([]byte, error) {
	if len(src) < 16 {
		return nil, errors.New("short xerial snappy header")
	}
	src = src[16:]
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("short xerial snappy chunk")
		}
		n := binary.BigEndian.Uint32(src)
		if uint64(n) > uint64(len(src)-4) {
			return nil, errors.New("xerial snappy chunk past the end")
		}
		var err error
		if dst, err = snappyBlock(dst, src[4:4+n]); err != nil {
			return nil, err
		}
		src = src[4+n:]
	}
	return dst, nil
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
