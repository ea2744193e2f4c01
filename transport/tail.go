package transport

import "context"

// TailReader is implemented by the endpoints of logs (transports with
// Replay) that can return the last messages they hold; find it by type
// assertion on an Endpoint:
//
//	if t, ok := ep.(transport.TailReader); ok { … }
//
// A pipe whose source cannot be acknowledged (multicast) reads its
// destination's tail when it starts: the origin headers there say what it
// had already written, so it neither writes those messages again nor
// misses what its source no longer holds.
type TailReader interface {
	// Tail returns the last messages the endpoint's destination holds:
	// for each of its streams (each partition of a topic), at most n,
	// oldest first: fewer than n only when they reach the stream's
	// first position (a pipe then knows all it holds of the stream, and
	// does not look further back). Stream and Seq are set as a
	// subscriber's would be, and Headers hold what was written, origin
	// headers included; Key and Payload may be left out (the tail is
	// read for its origin headers).
	Tail(ctx context.Context, n int) ([]Message, error)
}

// BackReader is implemented by the endpoints of logs that can read any
// stretch of a stream back from its end, a page at a time: a pipe whose
// destination's tail (TailReader) did not reach back to a source stream
// it meets looks further back for what it had written of it.
type BackReader interface {
	// Before returns the messages that stream holds before position
	// pos, at most n of them, oldest first: fewer than n only when the
	// page reaches the stream's first position, none when pos is at or
	// before it. Stream and Seq are set as TailReader's are, and
	// Headers hold what was written; Key and Payload may be left out
	// (a page is read for its origin headers).
	Before(ctx context.Context, stream StreamID, pos uint64, n int) ([]Message, error)
}
