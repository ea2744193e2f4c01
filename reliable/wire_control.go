package reliable

import (
	"encoding/binary"

	"github.com/brokerless/brokerless/transport"
)

// Beat is the body of a HEARTBEAT or END datagram.
type Beat struct {
	// Next is the sequence number the publisher's next new message
	// will carry: everything below it has been sent.
	Next uint64
	// Low is the oldest sequence number still in the publisher's
	// retransmit window (Next when the window is empty).
	Low uint64
}

// AppendBeat appends a HEARTBEAT or END datagram to b.
func AppendBeat(b []byte, t PacketType, id transport.StreamID, beat Beat) []byte {
	b = appendHeader(b, t, id)
	b = binary.BigEndian.AppendUint64(b, beat.Next)
	return binary.BigEndian.AppendUint64(b, beat.Low)
}

// ParseBeat decodes the body of a HEARTBEAT or END datagram whose header
// ParseHeader accepted.
func ParseBeat(b []byte) (Beat, error) {
	if len(b) != beatLen {
		return Beat{}, errShort
	}
	beat := Beat{
		Next: binary.BigEndian.Uint64(b[headerLen:]),
		Low:  binary.BigEndian.Uint64(b[headerLen+8:]),
	}
	if beat.Next == 0 || beat.Low == 0 {
		return Beat{}, errSeqZero
	}
	if beat.Low > beat.Next {
		return Beat{}, errHeartbeatOrder
	}
	return beat, nil
}

// Range is an inclusive range of sequence numbers.
type Range struct{ From, To uint64 }

// Len is the number of sequence numbers in r.
func (r Range) Len() uint64 { return r.To - r.From + 1 }

// AppendRanges appends a NACK, NCF or LOST datagram carrying rs (at most
// MaxWireRanges, ascending and disjoint) to b.
func AppendRanges(b []byte, t PacketType, id transport.StreamID, rs []Range) []byte {
	b = appendHeader(b, t, id)
	b = append(b, byte(len(rs)), 0)
	for _, r := range rs {
		b = binary.BigEndian.AppendUint64(b, r.From)
		b = binary.BigEndian.AppendUint64(b, r.To)
	}
	return b
}

// RangeReader iterates over the ranges of a NACK, NCF or LOST datagram
// without allocating. ParseRanges validates the whole datagram first.
type RangeReader struct {
	b []byte
}

// ParseRanges checks the body of a NACK, NCF or LOST datagram whose
// header ParseHeader accepted and returns a reader over its ranges.
func ParseRanges(b []byte) (RangeReader, error) {
	if len(b) < rangesHead {
		return RangeReader{}, errShort
	}
	n := int(b[headerLen])
	body := b[rangesHead:]
	if n == 0 || len(body) != n*rangeLen {
		return RangeReader{}, errRangeCount
	}
	var prev uint64
	for i := 0; i < n; i++ {
		r := rangeAt(body, i)
		if r.From == 0 {
			return RangeReader{}, errSeqZero
		}
		if r.From > r.To || (i > 0 && r.From <= prev) {
			return RangeReader{}, errRangeOrder
		}
		prev = r.To
	}
	return RangeReader{b: body}, nil
}

// Len is the number of ranges.
func (rr RangeReader) Len() int { return len(rr.b) / rangeLen }

// At returns range i.
func (rr RangeReader) At(i int) Range { return rangeAt(rr.b, i) }

func rangeAt(b []byte, i int) Range {
	off := i * rangeLen
	return Range{
		From: binary.BigEndian.Uint64(b[off:]),
		To:   binary.BigEndian.Uint64(b[off+8:]),
	}
}
