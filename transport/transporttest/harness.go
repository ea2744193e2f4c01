package transporttest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

var (
	// ErrFaultsUnsupported is returned (possibly wrapped) by
	// Harness.NewPair when it cannot inject the faults asked for. Tests
	// that need those faults are skipped.
	ErrFaultsUnsupported = errors.New("transporttest: harness cannot inject these faults")
	// ErrBadHarness is reported by Run for a Harness it cannot use.
	ErrBadHarness = errors.New("transporttest: bad harness")
)

// Topic is the topic the suite sets on every message it publishes. The
// subscriber returned by [Harness.NewPair] must receive messages of this
// topic (a ZeroMQ subscriber subscribes to it; a log daemon creates it).
const Topic = "transporttest"

// Defaults for the zero values of [Harness] fields.
const (
	DefaultMaxPayload = 1 << 20
	DefaultMessages   = 2000
	DefaultIdle       = 5 * time.Second
)

// reconnectIdle is how long the suite waits for the next event, at
// least, from a subscriber that may first have to reconnect to a
// restarted server or join a consumer group (a rebalance can take
// seconds). It stays below receiveDeadline, so such a wait ends as an
// idle subscriber, not a busy one.
const reconnectIdle = 15 * time.Second

// receiveDeadline bounds every wait for a stream to be delivered, so a
// broken transport fails instead of hanging.
const receiveDeadline = 30 * time.Second

// prompt bounds how long a call that must not block (Close unblocking
// Receive, a cancelled context) may take.
const prompt = 5 * time.Second

// Faults asks the harness to inject faults between publisher and
// subscriber, for example by wrapping the subscriber's socket with
// transport/faultnet. Each field is a probability per packet. The zero
// value is a clean network.
type Faults struct {
	Loss, Duplicate, Reorder float64
	// Seed makes the faults reproducible.
	Seed int64
}

// IsZero reports whether f asks for a clean network.
func (f Faults) IsZero() bool { return f.Loss == 0 && f.Duplicate == 0 && f.Reorder == 0 }

// Pair is a connected publisher and subscriber. The suite closes Pub and
// Sub itself, every publisher NewPublisher returns and every subscriber
// NewSubscriber and NewGroupMember return. Each subscriber must
// implement [transport.Acknowledger] if, and only if, it claims
// [transport.AtLeastOnce].
type Pair struct {
	Pub transport.Publisher
	Sub transport.Subscriber
	// NewPublisher, if non-nil, starts another publisher of the same feed
	// on the same address (of a log: of the same topic and partition): a
	// publisher restart. It returns once what the new publisher sends can
	// reach Sub (the suite still tolerates a subscriber that needs a few
	// messages to notice the new session). Nil skips the Restart test.
	NewPublisher func() (transport.Publisher, error)
	// RestartServer kills the process that stores the pair's messages
	// (a logd, say) as a crash would, with no clean shutdown, and starts
	// it again on the same address and data; it returns once the server
	// serves again. Pub and Sub may have to reconnect, but must carry on:
	// the Durable check publishes more on Pub and expects Sub to deliver
	// it. The Durable check needs RestartServer: a transport that claims
	// Durable with a nil RestartServer fails.
	RestartServer func() error
	// NewSubscriber opens another subscriber of the pair's stream that
	// starts at position from (an offset of a log): the Seq at which Sub
	// delivered a message. The Replay and Durable checks need it: a
	// transport that claims Replay or Durable with a nil NewSubscriber
	// fails.
	NewSubscriber func(from uint64) (transport.Subscriber, error)
	// NewGroupMember opens another subscriber in Sub's consumer group
	// (or, for a transport without groups, the subscriber that resumes in
	// Sub's place). The AtLeastOnce check calls it once Sub has
	// acknowledged some messages and been closed, and waits at least 15 s
	// for the first message (a group may have to rebalance first). The
	// check needs it: a transport that claims AtLeastOnce with a nil
	// NewGroupMember fails.
	NewGroupMember func() (transport.Subscriber, error)
}

// Harness tells [Run] how to make pairs of a transport and what the
// transport promises beyond its [transport.Semantics].
type Harness struct {
	// NewPair returns a connected publisher and subscriber on a fresh
	// address, with faults f injected between them. The subscriber must be
	// ready to receive (joined, subscribed to [Topic]) when NewPair
	// returns. NewPair returns an error wrapping [ErrFaultsUnsupported]
	// when it cannot inject f; tests that need faults are then skipped.
	// Anything else the pair needs (a daemon, a temporary directory) is
	// released with t.Cleanup; it is released after Pub and Sub are
	// closed.
	NewPair func(t *testing.T, f Faults) (Pair, error)
	// MaxPayload is the largest payload the transport promises to carry
	// on a clean network (0 = DefaultMaxPayload, 1 MiB).
	MaxPayload int
	// Messages is how many messages the bulk tests publish
	// (0 = DefaultMessages); use fewer where the transport is slow, for
	// example under -race. It is raised to 8 if smaller.
	Messages int
	// ContiguousSeq says the transport gives every message exactly one
	// sequence number, so a stream's messages and gaps together cover
	// every sequence number from the first to the last without holes.
	// False allows holes between consecutive events (a transport that
	// fragments a message over k packets may use k sequence numbers).
	ContiguousSeq bool
	// TimeResolution is the granularity at which the transport carries
	// Message.Time: a received time may differ from the published one by
	// less than this. Zero means exact to the nanosecond (transports that
	// send Unix nanoseconds); a Kafka-protocol transport carries
	// milliseconds.
	TimeResolution time.Duration
	// Idle is how long the suite waits for the next event, after the
	// publisher has flushed, before it concludes the subscriber has
	// delivered everything it will (0 = DefaultIdle). Only a run whose
	// last message was lost waits this long.
	Idle time.Duration
}

// validate reports a harness Run cannot use.
func (h Harness) validate() error {
	switch {
	case h.NewPair == nil:
		return fmt.Errorf("%w: NewPair is nil", ErrBadHarness)
	case h.MaxPayload != 0 && h.MaxPayload < payloadHeader:
		return fmt.Errorf("%w: MaxPayload %d is below the %d bytes the suite's payloads need", ErrBadHarness, h.MaxPayload, payloadHeader)
	case h.Messages < 0, h.TimeResolution < 0, h.Idle < 0:
		return fmt.Errorf("%w: negative Messages, TimeResolution or Idle", ErrBadHarness)
	}
	return nil
}

func (h Harness) maxPayload() int {
	if h.MaxPayload <= 0 {
		return DefaultMaxPayload
	}
	return h.MaxPayload
}

func (h Harness) messages() int {
	if h.Messages <= 0 {
		return DefaultMessages
	}
	return max(h.Messages, 8)
}

func (h Harness) idle() time.Duration {
	if h.Idle <= 0 {
		return DefaultIdle
	}
	return h.Idle
}

// patientIdle is how long to wait for the next event from a subscriber
// that may have to reconnect or join a group first.
func (h Harness) patientIdle() time.Duration { return max(h.idle(), reconnectIdle) }
