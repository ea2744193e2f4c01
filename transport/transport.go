package transport

import "context"

// Publisher sends messages on one stream.
//
// Implementations are safe for concurrent use.
type Publisher interface {
	// Publish queues m for sending, assigning its stream and sequence
	// number. It copies what it needs from m before returning, so the
	// caller may reuse m's buffers at once. Publish blocks, honouring ctx,
	// while the transport's bounded send queue is full.
	Publish(ctx context.Context, m Message) error
	// Flush blocks until every message published so far has been handed
	// to the network (or, for durable transports, acknowledged).
	Flush(ctx context.Context) error
	// Semantics declares the transport's delivery guarantees.
	Semantics() Semantics
	// Close flushes, tells subscribers the stream ended where the
	// transport can, and releases every resource and goroutine.
	Close() error
}

// Subscriber receives events from one or more streams.
//
// Receive is meant to be called from one goroutine; Close may be called
// from any goroutine and unblocks a pending Receive.
type Subscriber interface {
	// Receive blocks until the next event, ctx is done (it returns
	// ctx.Err()) or the subscriber is closed (it returns ErrClosed).
	// Slices in the returned event stay valid until the next call.
	Receive(ctx context.Context) (Event, error)
	// Semantics declares the transport's delivery guarantees.
	Semantics() Semantics
	// Close releases every resource and goroutine.
	Close() error
}
