package zmq

import (
	"encoding/binary"
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

// The header frame: the second frame of every message a brokerless
// publisher sends (the first is the topic). Its layout is in doc.go.
const (
	magic0, magic1 = 0xB7, 0x5A
	headerVersion  = 1
	// headerFixed is the length of the fixed part of a header frame.
	headerFixed = 32
	// maxHeaders bounds the application headers of one message.
	maxHeaders = 1 << 12
)

// kind says what a header frame's message is.
type kind uint8

const (
	// kindMessage: one message; the header frame carries its key and
	// application headers, the third frame its payload.
	kindMessage kind = 1
	// kindPacked: count consecutive messages of the stream, from seq,
	// packed in the third frame (see pack.go).
	kindPacked kind = 2
	// kindHeartbeat: no message; seq is the next sequence number the
	// stream will use, so a subscriber that saw less knows it lost the
	// rest. Two frames.
	kindHeartbeat kind = 3
	// kindEnd: the publisher closed the stream; seq is the next sequence
	// number it would have used. Two frames.
	kindEnd kind = 4
)

func (k kind) String() string {
	switch k {
	case kindMessage:
		return "message"
	case kindPacked:
		return "packed"
	case kindHeartbeat:
		return "heartbeat"
	case kindEnd:
		return "end"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// header is a decoded header frame.
type header struct {
	kind    kind
	feed    uint32
	session uint64
	seq     uint64
	// time is Unix nanoseconds: the message's time (packed: the first
	// message's), or when a heartbeat or end was sent.
	time int64
	// count is the number of messages of a packed message.
	count uint64
	// key and headers of a kindMessage (aliasing the frame).
	key     []byte
	headers []transport.Header
}

// appendHeader appends the header frame of h to b.
func appendHeader(b []byte, h *header) []byte {
	b = append(b, magic0, magic1, headerVersion, byte(h.kind))
	b = binary.BigEndian.AppendUint32(b, h.feed)
	b = binary.BigEndian.AppendUint64(b, h.session)
	b = binary.BigEndian.AppendUint64(b, h.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(h.time))
	switch h.kind {
	case kindMessage:
		b = appendKeyHeaders(b, h.key, h.headers)
	case kindPacked:
		b = binary.AppendUvarint(b, h.count)
	}
	return b
}

// appendKeyHeaders appends a key and application headers, each length
// a uvarint.
func appendKeyHeaders(b, key []byte, hs []transport.Header) []byte {
	b = appendBytes(b, key)
	b = binary.AppendUvarint(b, uint64(len(hs)))
	for _, h := range hs {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		b = appendBytes(b, h.Value)
	}
	return b
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// keyHeadersLen is how many bytes appendKeyHeaders appends.
func keyHeadersLen(key []byte, hs []transport.Header) int {
	n := uvarintLen(uint64(len(key))) + len(key) + uvarintLen(uint64(len(hs)))
	for _, h := range hs {
		n += uvarintLen(uint64(len(h.Key))) + len(h.Key) + uvarintLen(uint64(len(h.Value))) + len(h.Value)
	}
	return n
}

// uvarint reads a uvarint written the shortest way, as
// binary.AppendUvarint writes it; n <= 0 when there is none. Refusing
// longer encodings makes every value's encoding unique.
func uvarint(b []byte) (v uint64, n int) {
	v, n = binary.Uvarint(b)
	if n > 0 && n != uvarintLen(v) {
		return 0, -n
	}
	return v, n
}

// varint reads a zigzag varint written the shortest way.
func varint(b []byte) (int64, int) {
	u, n := uvarint(b)
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v, n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// isHeader reports whether frame starts like a header frame of a
// version this package reads.
func isHeader(frame []byte) bool {
	return len(frame) >= headerFixed && frame[0] == magic0 && frame[1] == magic1 && frame[2] == headerVersion
}

// parseHeader decodes a header frame. The key and header values alias
// frame; the headers are appended to hs[:0], whose array is reused.
func parseHeader(frame []byte, hs []transport.Header) (header, error) {
	var h header
	if !isHeader(frame) {
		return h, fmt.Errorf("%w: %d bytes, not a version %d header", ErrBadHeader, len(frame), headerVersion)
	}
	h.kind = kind(frame[3])
	h.feed = binary.BigEndian.Uint32(frame[4:])
	h.session = binary.BigEndian.Uint64(frame[8:])
	h.seq = binary.BigEndian.Uint64(frame[16:])
	h.time = int64(binary.BigEndian.Uint64(frame[24:]))
	if h.seq == 0 {
		// Sequence numbers start at 1 (a heartbeat's or end's is the
		// next one, at least 1).
		return h, fmt.Errorf("%w: sequence number 0", ErrBadHeader)
	}
	rest := frame[headerFixed:]
	var err error
	switch h.kind {
	case kindMessage:
		h.key, h.headers, rest, err = readKeyHeaders(rest, hs[:0])
		if err != nil {
			return h, err
		}
	case kindPacked:
		var n int
		h.count, n = uvarint(rest)
		if n <= 0 || h.count == 0 {
			return h, fmt.Errorf("%w: packed message without a count", ErrBadHeader)
		}
		if h.seq+(h.count-1) < h.seq {
			return h, fmt.Errorf("%w: %d messages from seq %d overflow", ErrBadHeader, h.count, h.seq)
		}
		rest = rest[n:]
	case kindHeartbeat, kindEnd:
	default:
		return h, fmt.Errorf("%w: unknown kind %d", ErrBadHeader, frame[3])
	}
	if len(rest) != 0 {
		return h, fmt.Errorf("%w: %d bytes after a %s header", ErrBadHeader, len(rest), h.kind)
	}
	return h, nil
}

// readKeyHeaders reads what appendKeyHeaders wrote, appending the
// headers to hs, and returns what follows.
func readKeyHeaders(b []byte, hs []transport.Header) (key []byte, _ []transport.Header, rest []byte, err error) {
	key, b, err = readBytes(b, "key")
	if err != nil {
		return nil, hs, nil, err
	}
	n, k := uvarint(b)
	// Each header takes at least two bytes: more cannot be there.
	if k <= 0 || n > maxHeaders || n > uint64(len(b)-k)/2 {
		return nil, hs, nil, fmt.Errorf("%w: bad header count", ErrBadHeader)
	}
	b = b[k:]
	for range n {
		var name, value []byte
		if name, b, err = readBytes(b, "header name"); err != nil {
			return nil, hs, nil, err
		}
		if value, b, err = readBytes(b, "header value"); err != nil {
			return nil, hs, nil, err
		}
		hs = append(hs, transport.Header{Key: string(name), Value: value})
	}
	return key, hs, b, nil
}

// readBytes reads a uvarint length and that many bytes.
func readBytes(b []byte, what string) ([]byte, []byte, error) {
	n, k := uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: bad %s length", ErrBadHeader, what)
	}
	b = b[k:]
	return b[:n:n], b[n:], nil
}
