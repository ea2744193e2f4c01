package transport

import "context"

// BatchSubscriber is implemented by subscribers that can hand over the
// events they have ready at once; find it by type assertion, as pipes
// do. ReceiveBatch returns at least one event and at most maxEvents,
// with Receive's errors; the events, and their slices, stay valid until
// the next Receive or ReceiveBatch call. It delivers exactly what as
// many Receive calls would, in the same order: it saves the calls and a
// copy of each event, as Aeron's poll with a fragment limit does.
type BatchSubscriber interface {
	Subscriber
	ReceiveBatch(ctx context.Context, maxEvents int) ([]Event, error)
}
