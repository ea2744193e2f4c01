package matrix

import (
	"context"
	"errors"
)

// Options is what a Link must carry: one cell of the matrix.
type Options struct {
	// Kind is the scenario.
	Kind Kind
	// Size is each message's payload, bytes (≥ StampSize).
	Size int
	// Subscribers is how many subscribers receive every message.
	Subscribers int
	// Loss is the fraction of datagrams or messages each subscriber
	// drops on purpose (0: none).
	Loss float64
	// Durable asks a transport that stores for a publish acknowledged
	// only once fsynced; off, fsync is left to an interval or the OS.
	Durable bool
	// Messages is how many messages the run will send at most: queues
	// that must hold a whole run are sized from it.
	Messages int
	// Seed seeds injected loss.
	Seed int64
}

// Contender is one row of the table: a transport, a baseline or a peer.
type Contender interface {
	// Name is the row's name, e.g. "mcast" or "nats".
	Name() string
	// Baseline is the raw baseline its figures are divided by ("" for a
	// baseline itself), Peer the contender users would pick instead
	// ("" for none).
	Baseline() string
	Peer() string
	// Can says why the contender cannot run o: an error wrapping
	// ErrNotApplicable (the cell makes no sense, e.g. a 64 KiB UDP
	// datagram), ErrUnavailable (a peer missing on this machine) or
	// ErrNotRun (it would break a rule of the benchmark).
	Can(o Options) error
	// Open starts a publisher and o.Subscribers subscribers, connected.
	Open(ctx context.Context, o Options) (Link, error)
}

// Link is a publisher and its subscribers, ready to carry messages.
type Link interface {
	// Send publishes one message (p may be reused once Send returns).
	Send(p []byte) error
	// Flush pushes out what Send buffered; the runner calls it when
	// the publisher is ahead of its schedule and at the end of a run.
	Flush() error
	// Subs are the subscribers, one per Options.Subscribers.
	Subs() []Sub
	Close() error
}

// Sub is one subscriber.
type Sub interface {
	// Run calls fn with each message's payload (valid during the call)
	// until ctx is done or the subscriber fails, and returns within
	// about 100 ms of ctx's end.
	Run(ctx context.Context, fn func(p []byte)) error
	// Counts is what the transport reported: gaps and recoveries.
	Counts() Counts
}

// Tally is a Link whose receiving end is not told each message but
// counts them: a StatsD server, which sums the counter lines it gets.
// Its Subs are none; only throughput scenarios run it.
type Tally interface {
	Link
	// Counted is how many messages the server has counted so far.
	Counted() (uint64, error)
}

// Counts is what a subscriber's transport reported of loss.
type Counts struct {
	// Gaps is how many messages were reported lost.
	Gaps uint64
	// Recovered is how many were lost, then repaired (frames, for
	// multicast: a message of several datagrams counts each).
	Recovered uint64
}

var (
	// ErrNotApplicable: the cell makes no sense for the contender.
	ErrNotApplicable = errors.New("not applicable")
	// ErrUnavailable: a peer is missing on this machine.
	ErrUnavailable = errors.New("not available")
	// ErrNotRun: the contender would break a rule this benchmark keeps
	// (e.g. multicast only with TTL 0); not an error under
	// BROKERLESS_INTEROP=1.
	ErrNotRun = errors.New("not run")
)
