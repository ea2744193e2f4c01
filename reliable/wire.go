package reliable

import (
	"encoding/binary"

	"github.com/brokerless/brokerless/transport"
)

// Wire constants of protocol version 1. doc.go describes the layout.
const (
	magic0, magic1 = 'B', 'L'
	// Version is the protocol version this package speaks.
	Version = 1

	headerLen    = 16 // magic, version, type, feed, session
	dataHeadLen  = headerLen + 28
	beatLen      = headerLen + 16
	statusLen    = headerLen + 28
	rangesHead   = headerLen + 2
	rangeLen     = 16
	frameHeadLen = 3 // length u16, flags u8

	// MaxTopicLen is the longest topic a message carries (its length
	// is one byte on the wire); a longer one is ErrTooLarge.
	MaxTopicLen = 255
	// MaxHeaders is the most headers a message carries, and
	// MaxHeaderKeyLen the longest header key.
	MaxHeaders      = 255
	MaxHeaderKeyLen = 255

	// MaxWireRanges is the most ranges one NACK, NCF or LOST packet
	// carries.
	MaxWireRanges = 255
	// MaxControlLen is the longest NACK, NCF or LOST datagram,
	// authentication trailer included: what a publisher needs to read
	// a NACK.
	MaxControlLen = rangesHead + MaxWireRanges*rangeLen + TrailerLen
)

// PacketType is the type byte of a datagram.
type PacketType uint8

// Packet types.
const (
	TypeData      PacketType = 1 // messages (original or repair)
	TypeHeartbeat PacketType = 2 // idle publisher: next sequence and window low edge
	TypeEnd       PacketType = 3 // publisher closed the session
	TypeNack      PacketType = 4 // receiver → publisher: please repair these ranges
	TypeNcf       PacketType = 5 // publisher → group: NACK heard, repair coming
	TypeLost      PacketType = 6 // publisher → group: these ranges are unrecoverable
	TypeStatus    PacketType = 7 // receiver → publisher: how far it has consumed (flow control)
)

func (t PacketType) String() string {
	switch t {
	case TypeData:
		return "DATA"
	case TypeHeartbeat:
		return "HEARTBEAT"
	case TypeEnd:
		return "END"
	case TypeNack:
		return "NACK"
	case TypeNcf:
		return "NCF"
	case TypeLost:
		return "LOST"
	case TypeStatus:
		return "STATUS"
	}
	return "UNKNOWN"
}

// Data flags (byte 16 of a DATA datagram).
const (
	dataFlagRepair = 0x01
	dataFlagNoFlow = 0x02 // the publisher runs without flow control
	dataFlagPadded = 0x04 // zero bytes follow the last frame (SenderConfig.PadFull)
)

// Frame flags.
const (
	frameBegin   = 0x01
	frameEnd     = 0x02
	frameTopic   = 0x04
	frameKey     = 0x08
	frameHeaders = 0x10
	frameMeta    = frameTopic | frameKey | frameHeaders
	frameKnown   = frameBegin | frameEnd | frameMeta
)

// Header is the common part of every datagram.
type Header struct {
	Type   PacketType
	Stream transport.StreamID
	// Tagged is set when the datagram carries an authentication
	// trailer (the version byte's top bit).
	Tagged bool
}

// ParseHeader decodes the common header of b. Errors wrap ErrForeign
// (not our magic or version) or ErrMalformed.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < 4 || b[0] != magic0 || b[1] != magic1 {
		return Header{}, errNotOurs
	}
	if b[2]&^authFlag != Version {
		return Header{}, errVersion
	}
	if len(b) < headerLen {
		return Header{}, errShort
	}
	h := Header{
		Tagged: b[2]&authFlag != 0,
		Type:   PacketType(b[3]),
		Stream: transport.StreamID{
			Feed:    binary.BigEndian.Uint32(b[4:]),
			Session: binary.BigEndian.Uint64(b[8:]),
		},
	}
	if h.Type < TypeData || h.Type > TypeStatus {
		return Header{}, errType
	}
	if h.Stream.Session == 0 {
		return Header{}, errZeroSession
	}
	return h, nil
}

func appendHeader(b []byte, t PacketType, id transport.StreamID) []byte {
	b = append(b, magic0, magic1, Version, byte(t))
	b = binary.BigEndian.AppendUint32(b, id.Feed)
	return binary.BigEndian.AppendUint64(b, id.Session)
}
