package transporttest

import (
	"encoding/binary"
	"fmt"
	"math"
)

// payloadHeader is the size of a payload's index and length fields: the
// smallest payload Payload makes.
const payloadHeader = 12

// Payload returns the payload the suite publishes as message index: size
// bytes (at least 12) holding the index, the length and a filler derived
// from the index, so [PayloadIndex] detects any corruption, truncation or
// mix-up. Index must not be negative.
func Payload(index, size int) []byte {
	size = max(size, payloadHeader)
	p := make([]byte, size)
	binary.BigEndian.PutUint64(p, uint64(index))
	binary.BigEndian.PutUint32(p[8:], uint32(size))
	f := newFiller(index)
	for b := p[payloadHeader:]; len(b) > 0; {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], f.next())
		b = b[copy(b, w[:]):]
	}
	return p
}

// PayloadIndex returns the index of a payload made by [Payload]. It
// returns an error wrapping [ErrBadPayload] if p is not exactly such a
// payload.
func PayloadIndex(p []byte) (int, error) {
	if len(p) < payloadHeader {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadPayload, len(p), payloadHeader)
	}
	idx := binary.BigEndian.Uint64(p)
	if idx > math.MaxInt32 {
		return 0, fmt.Errorf("%w: index %d out of range", ErrBadPayload, idx)
	}
	if n := binary.BigEndian.Uint32(p[8:]); uint64(n) != uint64(len(p)) {
		return 0, fmt.Errorf("%w: index %d: %d bytes, but it was published with %d", ErrBadPayload, idx, len(p), n)
	}
	f := newFiller(int(idx))
	for off := payloadHeader; off < len(p); off += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], f.next())
		for i, c := range p[off:min(off+8, len(p))] {
			if c != w[i] {
				return 0, fmt.Errorf("%w: index %d: corrupted at byte %d of %d", ErrBadPayload, idx, off+i, len(p))
			}
		}
	}
	return int(idx), nil
}

// filler is a xorshift64* generator: cheap, deterministic bytes that
// differ between indexes.
type filler struct{ x uint64 }

func newFiller(index int) *filler {
	return &filler{x: uint64(index)*0x9E3779B97F4A7C15 ^ 0xD1B54A32D192ED03}
}

func (f *filler) next() uint64 {
	f.x ^= f.x >> 12
	f.x ^= f.x << 25
	f.x ^= f.x >> 27
	return f.x * 0x2545F4914F6CDD1D
}
