package transport

import (
	"context"
	"time"
)

// LogReader is implemented by the endpoints of logs (transports with
// Replay) whose records can be read at any position; find it by type
// assertion on an Endpoint:
//
//	if lr, ok := ep.(transport.LogReader); ok { … }
//
// A subscriber of a direct feed with an archive (the log a recorder
// writes the feed to, see package transport/archive) uses it to find a
// message of the feed by its origin position before it reads from
// there, which a Subscriber, started once at one position, cannot do.
type LogReader interface {
	// OpenLog connects a reader of the endpoint's log.
	OpenLog(ctx context.Context) (Log, error)
}

// Log reads the streams of one log (the partitions of a topic) at any
// position (offset). A Log is meant for one goroutine at a time.
type Log interface {
	// Streams lists the log's streams: each partition of its topic, or
	// only those its URL names. None when the log does not exist yet.
	Streams(ctx context.Context) ([]StreamID, error)
	// Bounds returns the first position stream still holds and the
	// position the next record appended to it will take.
	Bounds(ctx context.Context, stream StreamID) (first, next uint64, err error)
	// PositionAt returns the position of the first record of stream
	// stamped at or after t (to the millisecond), or the next position
	// when none is.
	PositionAt(ctx context.Context, stream StreamID, t time.Time) (uint64, error)
	// Read returns records of stream from position pos on, in order:
	// the first is the first record the stream holds at or after pos
	// (the log start when pos is older). It returns at least one,
	// waiting, until ctx ends, for one to be appended when there is none
	// yet. Stream and Seq are set as a subscriber's are; Headers hold
	// what was written, origin headers and gap markers included: Read
	// interprets nothing. The messages are the caller's: the Log does
	// not reuse them. Reading on from where the last Read ended is a
	// stream; reading elsewhere seeks.
	Read(ctx context.Context, stream StreamID, pos uint64) ([]Message, error)
	// Close releases the reader.
	Close() error
}
