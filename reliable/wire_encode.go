package reliable

import (
	"encoding/binary"
	"fmt"

	"github.com/brokerless/brokerless/transport"
)

var (
	errTopicLong   = fmt.Errorf("%w: topic over 255 bytes", ErrTooLarge)
	errHeaderCount = fmt.Errorf("%w: more than 255 headers", ErrTooLarge)
	errHeaderKey   = fmt.Errorf("%w: header key over 255 bytes", ErrTooLarge)
)

// metaSize is the encoded size of a first fragment's metadata, not
// counting the fragment total that a fragmented message adds.
func metaSize(m *transport.Message, delta int64) (int, error) {
	n := varintLen(delta)
	if m.Topic != "" {
		if len(m.Topic) > MaxTopicLen {
			return 0, errTopicLong
		}
		n += 1 + len(m.Topic)
	}
	if len(m.Key) > 0 {
		n += uvarintLen(uint64(len(m.Key))) + len(m.Key)
	}
	if len(m.Headers) > 0 {
		if len(m.Headers) > MaxHeaders {
			return 0, errHeaderCount
		}
		n++
		for _, h := range m.Headers {
			if len(h.Key) > MaxHeaderKeyLen {
				return 0, errHeaderKey
			}
			n += 1 + len(h.Key) + uvarintLen(uint64(len(h.Value))) + len(h.Value)
		}
	}
	return n, nil
}

// appendFrame appends one frame. For a first fragment (flags has
// frameBegin) it writes m's metadata; total is the whole payload length,
// written only when the message is fragmented (frameEnd not set).
func appendFrame(b []byte, flags uint8, m *transport.Message, delta int64, total int, chunk []byte) []byte {
	if flags&frameBegin != 0 {
		if m.Topic != "" {
			flags |= frameTopic
		}
		if len(m.Key) > 0 {
			flags |= frameKey
		}
		if len(m.Headers) > 0 {
			flags |= frameHeaders
		}
	}
	lenAt := len(b)
	b = append(b, 0, 0, flags)
	if flags&frameBegin != 0 {
		b = binary.AppendVarint(b, delta)
		if flags&frameTopic != 0 {
			b = append(b, byte(len(m.Topic)))
			b = append(b, m.Topic...)
		}
		if flags&frameKey != 0 {
			b = binary.AppendUvarint(b, uint64(len(m.Key)))
			b = append(b, m.Key...)
		}
		if flags&frameHeaders != 0 {
			b = append(b, byte(len(m.Headers)))
			for _, h := range m.Headers {
				b = append(b, byte(len(h.Key)))
				b = append(b, h.Key...)
				b = binary.AppendUvarint(b, uint64(len(h.Value)))
				b = append(b, h.Value...)
			}
		}
		if flags&frameEnd == 0 {
			b = binary.AppendUvarint(b, uint64(total))
		}
	}
	b = append(b, chunk...)
	binary.BigEndian.PutUint16(b[lenAt:], uint16(len(b)-lenAt-frameHeadLen))
	return b
}

// appendDataHead starts a DATA datagram; putDataCount sets its frame
// count once the datagram is complete.
func appendDataHead(b []byte, id transport.StreamID, first, low uint64, base int64) []byte {
	b = appendHeader(b, TypeData, id)
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, first)
	b = binary.BigEndian.AppendUint64(b, low)
	return binary.BigEndian.AppendUint64(b, uint64(base))
}

func putDataCount(b []byte, count int) {
	binary.BigEndian.PutUint16(b[headerLen+2:], uint16(count))
}

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
