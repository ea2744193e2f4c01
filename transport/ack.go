package transport

import "context"

// Acknowledger is implemented by subscribers that offer at-least-once
// consumption (Semantics has AtLeastOnce); find it by type assertion:
//
//	if a, ok := sub.(transport.Acknowledger); ok { … }
//
// The application acknowledges what it has finished processing. What it
// has not acknowledged when it, or its process, stops is delivered again:
// to the next subscriber that starts in its place, or to another member
// of its consumer group. Messages acknowledged are not delivered again
// to the group, except those acknowledged in the moments before a crash,
// which a transport may redeliver (at least once, never at most once).
type Acknowledger interface {
	// Ack records that every message of stream up to and including seq
	// has been processed. Acknowledgements are cumulative per stream, as
	// a Kafka consumer's committed offset is; acknowledging a position
	// below one already acknowledged does nothing. The transport may
	// batch acknowledgements; Close makes the last ones durable.
	Ack(ctx context.Context, stream StreamID, seq uint64) error
}
