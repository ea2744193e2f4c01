package statsd

import "context"

// Backend receives every flush. The Server calls each backend's Flush
// one flush at a time, all the backends of a flush at once (each from a
// goroutine of its own, sharing the Snapshot, which they only read),
// with a context bounded by Config.BackendTimeout and, under Serve, by
// the next flush.
type Backend interface {
	// Name names the backend in logs and self-metrics.
	Name() string
	Flush(ctx context.Context, s *Snapshot) error
}

// PacketBackend is a Backend that also sees every packet as received
// (the repeater). Packet is called from the reading goroutines, possibly
// at once, and sometimes with the aggregator locked: it must not block.
// p is valid only during the call.
type PacketBackend interface {
	Backend
	Packet(p []byte)
}

// Closer is a Backend with something to release when the Server stops,
// after the final flush.
type Closer interface {
	Close() error
}

// lineLoser is a backend that counts the lines it lost (Log, Console): its
// Flush may return before it knows, so the count comes apart, in the
// next flush's ServerStats.BackendLinesLost.
type lineLoser interface {
	// linesLost returns the lines lost since the last call.
	linesLost() uint64
}
