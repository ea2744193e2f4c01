package reliable

import (
	"encoding/binary"

	"github.com/brokerless/brokerless/transport"
)

// Status is the body of a STATUS datagram: a receiver telling the
// publisher how far it has consumed the stream, for flow control.
type Status struct {
	// Receiver names the receiver (random, never 0).
	Receiver uint64
	// Next is the next sequence number the receiver needs.
	Next uint64
	// Window is how many bytes of datagrams the receiver can take past
	// Next.
	Window uint32
	// Tag is the receiver's flow-control tag (FlowTagged), 0 for none.
	Tag uint64
}

// AppendStatus appends a STATUS datagram to b.
func AppendStatus(b []byte, id transport.StreamID, st Status) []byte {
	b = appendHeader(b, TypeStatus, id)
	b = binary.BigEndian.AppendUint64(b, st.Receiver)
	b = binary.BigEndian.AppendUint64(b, st.Next)
	b = binary.BigEndian.AppendUint32(b, st.Window)
	return binary.BigEndian.AppendUint64(b, st.Tag)
}

// ParseStatus decodes the body of a STATUS datagram whose header
// ParseHeader accepted.
func ParseStatus(b []byte) (Status, error) {
	if len(b) != statusLen {
		return Status{}, errShort
	}
	st := Status{
		Receiver: binary.BigEndian.Uint64(b[headerLen:]),
		Next:     binary.BigEndian.Uint64(b[headerLen+8:]),
		Window:   binary.BigEndian.Uint32(b[headerLen+16:]),
		Tag:      binary.BigEndian.Uint64(b[headerLen+20:]),
	}
	switch {
	case st.Receiver == 0:
		return Status{}, errZeroReceiver
	case st.Next == 0:
		return Status{}, errSeqZero
	}
	return st, nil
}
