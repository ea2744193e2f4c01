package transport

import (
	"fmt"
	"time"
)

// StreamID identifies one publisher incarnation.
//
// Feed names the logical stream (chosen by configuration and stable
// across restarts, like an Aeron stream id). Session is drawn at random
// each time a publisher starts, so a restarted publisher is never
// confused with the one before it. A zero Session never appears on the
// wire.
type StreamID struct {
	Feed    uint32
	Session uint64
}

// IsZero reports whether id is the zero StreamID.
func (id StreamID) IsZero() bool { return id == StreamID{} }

// String formats id as feed/session, the session in hexadecimal.
func (id StreamID) String() string {
	return fmt.Sprintf("%d/%016x", id.Feed, id.Session)
}

// Header is one application header carried with a message.
type Header struct {
	Key   string
	Value []byte
}

// Message is the unit a transport carries.
//
// On Publish, Stream and Seq are ignored (the transport assigns them) and
// a zero Time is replaced by the current time. On receive, every field is
// set by the transport. Slices in a received Message are owned by the
// subscriber and stay valid only until the next call to Receive: copy
// what must be kept.
type Message struct {
	// Stream is the publisher incarnation that sent the message.
	Stream StreamID
	// Seq is the message's sequence number within Stream. Sequence
	// numbers increase strictly; a transport documents whether they are
	// contiguous (a multicast message fragmented over k datagrams uses k
	// sequence numbers).
	Seq uint64
	// Time is the publish (event) time.
	Time time.Time
	// Topic and Key are optional routing information.
	Topic string
	Key   []byte
	// Headers are optional application headers.
	Headers []Header
	// Payload is the message body.
	Payload []byte
}
