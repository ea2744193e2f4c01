package reliable

import (
	"encoding/binary"
	"math"
)

// DataHead is the fixed part of a DATA datagram after the common header.
type DataHead struct {
	Repair   bool   // a retransmission
	NoFlow   bool   // the publisher runs without flow control
	Padded   bool   // zero bytes follow the last frame
	Count    int    // frames in the datagram
	FirstSeq uint64 // sequence number of the first frame; frame i has FirstSeq+i
	Low      uint64 // oldest sequence in the publisher's window when first sent
	BaseTime int64  // Unix nanoseconds; frame times are deltas from it
}

// Frame is one decoded frame of a DATA datagram. Its slices point into
// the datagram.
type Frame struct {
	Flags uint8
	// Time is the message's publish time in Unix nanoseconds (first
	// fragment only).
	Time       int64
	Topic      []byte
	Key        []byte
	headers    []byte
	NumHeaders int
	// Total is the whole payload length of a fragmented message (first
	// fragment of a message that needs more than one frame).
	Total int
	// Chunk is the payload carried by this frame.
	Chunk []byte
}

// Begin reports whether f starts a message.
func (f *Frame) Begin() bool { return f.Flags&frameBegin != 0 }

// End reports whether f completes a message.
func (f *Frame) End() bool { return f.Flags&frameEnd != 0 }

// Headers returns an iterator over the frame's application headers.
func (f *Frame) Headers() HeaderReader { return HeaderReader{b: f.headers, n: f.NumHeaders} }

// HeaderReader iterates over the headers of a frame. The frame decoder
// validated them already.
type HeaderReader struct {
	b []byte
	n int
}

// Next returns the next header, or ok false at the end.
func (hr *HeaderReader) Next() (key, value []byte, ok bool) {
	if hr.n == 0 {
		return nil, nil, false
	}
	hr.n--
	kl := int(hr.b[0])
	key = hr.b[1 : 1+kl]
	rest := hr.b[1+kl:]
	vl, w := binary.Uvarint(rest)
	value = rest[w : w+int(vl)]
	hr.b = rest[w+int(vl):]
	return key, value, true
}

// ParseData decodes a DATA datagram whose header ParseHeader accepted.
// It validates every frame before returning, appending them to
// frames[:0], so a datagram is either used whole or rejected whole.
func ParseData(b []byte, frames []Frame) (DataHead, []Frame, error) {
	frames = frames[:0]
	if len(b) < dataHeadLen {
		return DataHead{}, frames, errShort
	}
	flags := b[headerLen]
	if flags&^(dataFlagRepair|dataFlagNoFlow|dataFlagPadded) != 0 || b[headerLen+1] != 0 {
		return DataHead{}, frames, errDataFlags
	}
	h := DataHead{
		Repair:   flags&dataFlagRepair != 0,
		NoFlow:   flags&dataFlagNoFlow != 0,
		Padded:   flags&dataFlagPadded != 0,
		Count:    int(binary.BigEndian.Uint16(b[headerLen+2:])),
		FirstSeq: binary.BigEndian.Uint64(b[headerLen+4:]),
		Low:      binary.BigEndian.Uint64(b[headerLen+12:]),
		BaseTime: int64(binary.BigEndian.Uint64(b[headerLen+20:])),
	}
	if h.Count == 0 {
		return DataHead{}, frames, errNoFrames
	}
	if h.FirstSeq == 0 || h.Low == 0 {
		return DataHead{}, frames, errSeqZero
	}
	if h.Low > h.FirstSeq {
		return DataHead{}, frames, errLowOrder
	}
	if h.FirstSeq > math.MaxUint64-uint64(h.Count) {
		return DataHead{}, frames, errSeqWrap
	}
	rest := b[dataHeadLen:]
	for len(rest) > 0 {
		if len(frames) == h.Count {
			if !h.Padded || !zeros(rest) {
				return DataHead{}, frames, errTrailing
			}
			break
		}
		// Decoded in place: a Frame is 120 bytes, and copying it out
		// of a decoder and into frames was a tenth of a subscriber's
		// work a 64-byte message.
		frames = append(frames, Frame{})
		n, err := frames[len(frames)-1].decode(rest, h.BaseTime)
		if err != nil {
			return DataHead{}, frames[:len(frames)-1], err
		}
		rest = rest[n:]
	}
	if len(frames) != h.Count {
		return DataHead{}, frames, errFrameCount
	}
	return h, frames, nil
}

// zeros reports whether b holds only zero bytes.
func zeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decode decodes the frame at the start of b into f, which must be
// zero, and returns its encoded length. On error f is left partly set.
func (f *Frame) decode(b []byte, base int64) (int, error) {
	if len(b) < frameHeadLen {
		return 0, errFrameLen
	}
	n := frameHeadLen + int(binary.BigEndian.Uint16(b))
	if n > len(b) {
		return 0, errFrameLen
	}
	f.Flags = b[2]
	if f.Flags&^frameKnown != 0 || (!f.Begin() && f.Flags&frameMeta != 0) {
		return 0, errFrameFlags
	}
	p := b[frameHeadLen:n]
	if f.Begin() {
		var ok bool
		if p, ok = f.decodeMeta(p, base); !ok {
			return 0, errFrameMeta
		}
		if !f.End() && f.Total < len(p) {
			return 0, errFrameTotal
		}
	}
	f.Chunk = p
	return n, nil
}

// decodeMeta reads the metadata of a first fragment from p and returns
// what follows it.
func (f *Frame) decodeMeta(p []byte, base int64) ([]byte, bool) {
	d, w := binary.Varint(p)
	if w <= 0 {
		return nil, false
	}
	f.Time = base + d
	p = p[w:]
	var ok bool
	if f.Flags&frameTopic != 0 {
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return nil, false
		}
		f.Topic, p = p[1:1+int(p[0])], p[1+int(p[0]):]
	}
	if f.Flags&frameKey != 0 {
		if f.Key, p, ok = uvarintBytes(p); !ok {
			return nil, false
		}
	}
	if f.Flags&frameHeaders != 0 {
		if p, ok = f.decodeHeaders(p); !ok {
			return nil, false
		}
	}
	if !f.End() {
		t, w := binary.Uvarint(p)
		if w <= 0 || t > math.MaxInt32 {
			return nil, false
		}
		f.Total, p = int(t), p[w:]
	}
	return p, true
}

func (f *Frame) decodeHeaders(p []byte) ([]byte, bool) {
	if len(p) < 1 || p[0] == 0 {
		return nil, false
	}
	f.NumHeaders = int(p[0])
	start := p[1:]
	q := start
	for i := 0; i < f.NumHeaders; i++ {
		if len(q) < 1 || len(q) < 1+int(q[0]) {
			return nil, false
		}
		var ok bool
		if _, q, ok = uvarintBytes(q[1+int(q[0]):]); !ok {
			return nil, false
		}
	}
	f.headers = start[:len(start)-len(q)]
	return q, true
}

// uvarintBytes reads a uvarint length and that many bytes.
func uvarintBytes(p []byte) (v, rest []byte, ok bool) {
	l, w := binary.Uvarint(p)
	if w <= 0 || l > uint64(len(p)-w) {
		return nil, nil, false
	}
	return p[w : w+int(l)], p[w+int(l):], true
}
