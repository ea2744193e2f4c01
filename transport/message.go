package transport

import (
	"fmt"
	"time"
)

// StreamID names one ordered stream of messages in its transport's own
// terms. Each transport sets the fields that name its streams and
// leaves the others zero, and documents them:
//
//   - multicast (mcast://): Feed, chosen by configuration and stable
//     across restarts (like an Aeron stream id), and Session, drawn at
//     random each time a publisher starts, so a restarted publisher is
//     never confused with the one before it; Seq is the sequence number
//     on the wire.
//   - Kafka and logd (logd://, kafka://): Topic and Partition; a
//     partition is one stream for its whole life, so Session is zero;
//     Seq is the record's offset.
//   - ZeroMQ (zmq+tcp://, zmq+ipc://): Session is the publisher's stream
//     id from its header frame, Seq the sequence number in it.
//
// No field stands in for another: a name is carried as a name.
type StreamID struct {
	// Topic and Partition name a partition of a log.
	Topic     string
	Partition int32
	// Feed and Session name one incarnation of a direct publisher.
	Feed    uint32
	Session uint64
}

// IsZero reports whether id is the zero StreamID.
func (id StreamID) IsZero() bool { return id == StreamID{} }

// String formats id as topic/partition for a log's stream, else as
// feed/session (the session in hexadecimal).
func (id StreamID) String() string {
	if id.Topic != "" {
		return fmt.Sprintf("%s/%d", id.Topic, id.Partition)
	}
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
	// Seq is the message's position within Stream: a sequence number,
	// or a log offset (see StreamID). Positions increase strictly; a
	// transport documents whether they are contiguous (a multicast
	// message fragmented over k datagrams uses k sequence numbers; a
	// compacted Kafka topic has holes).
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
