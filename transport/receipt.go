package transport

import "context"

// Receipt says where a published message landed: its stream and its
// position in it (a sequence number, or an offset of a log).
type Receipt struct {
	Stream StreamID
	Seq    uint64
}

// ReceiptPublisher is implemented by publishers that can tell where each
// message landed; find it by type assertion. Pipes and recorders use it
// to acknowledge their source only once the destination has taken a
// message.
type ReceiptPublisher interface {
	// PublishReceipt is Publish that also calls done once the transport
	// has accepted m — durably, when the transport is Durable; handed to
	// the network, when it is not — or has failed to, with where m
	// landed. done is called exactly once per message whose
	// PublishReceipt returned nil, in publish order for each stream, on
	// a goroutine of the transport's: it must not block. When
	// PublishReceipt returns an error, done is never called.
	PublishReceipt(ctx context.Context, m Message, done func(Receipt, error)) error
}
