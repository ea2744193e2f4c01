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
	// oldest first. Stream and Seq are set as a subscriber's would be,
	// and Headers hold what was written, origin headers included.
	Tail(ctx context.Context, n int) ([]Message, error)
}
