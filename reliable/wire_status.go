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
	// Leaving says the receiver is going away (its subscriber closed):
	// the publisher stops waiting for it at once instead of after
	// ReceiverTimeout. On the wire it is next = 0, which no position
	// takes (sequence numbers start at 1), so a publisher that predates
	// it drops the STATUS as malformed and times the receiver out as
	// before. Next is 0 when Leaving.
	Leaving bool
}

// AppendStatus appends a STATUS datagram to b.
func AppendStatus(b []byte, id transport.StreamID, st Status) []byte {
	b = appendHeader(b, TypeStatus, id)
	b = binary.BigEndian.AppendUint64(b, st.Receiver)
	next := st.Next
	if st.Leaving {
		next = 0
	}
	b = binary.BigEndian.AppendUint64(b, next)
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
	if st.Receiver == 0 {
		return Status{}, errZeroReceiver
	}
	st.Leaving = st.Next == 0
	return st, nil
}
