package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// pubFlags are the flags every publishing command (pub, mcast pub)
// shares: what to publish, and for how long.
type pubFlags struct {
	ticks    bool
	rate     float64
	seed     uint64
	topic    string
	count    uint64
	duration time.Duration
}

func (f *pubFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.ticks, "ticks", false, "publish synthetic market ticks instead of stdin lines")
	fs.Float64Var(&f.rate, "rate", 10000, "ticks per second (with --ticks)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the ticks' random walk (with --ticks)")
	fs.StringVar(&f.topic, "topic", "", "topic of every stdin line (without --ticks); on a multicast feed at most 255 bytes")
	fs.Uint64Var(&f.count, "count", 0, "stop after this many messages (0: no limit)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: at end of input, or when interrupted)")
}

// check checks the flags; changed reports whether a flag was given.
func (f *pubFlags) check(changed func(string) bool) error {
	switch {
	case !(f.rate > 0):
		return usagef("--rate %v: want a positive number of ticks per second", f.rate)
	case f.ticks && changed("topic"):
		return usagef("--topic is for stdin lines; a tick's topic is its symbol")
	}
	if !f.ticks {
		for _, name := range []string{"rate", "seed"} {
			if changed(name) {
				return usagef("--%s needs --ticks", name)
			}
		}
	}
	return nonNegative("duration", f.duration)
}

// publisherError is an error of the publisher itself, from Publish or
// Close: what was handed to it may not all have been delivered (a
// broker's acknowledgement of an earlier message failed, a close that
// did not see every acknowledgement).
type publisherError struct{ err error }

func (e *publisherError) Error() string { return e.err.Error() }

func (e *publisherError) Unwrap() error { return e.err }

// closePublisher closes pub, adding its error, as a publisherError, to
// err.
func closePublisher(pub transport.Publisher, err error) error {
	if cerr := pub.Close(); cerr != nil {
		return errors.Join(err, &publisherError{cerr})
	}
	return err
}

// limit is the number of ticks to publish: the smaller of --count and
// what --duration holds at --rate; 0 when neither bounds it.
func (f *pubFlags) limit() uint64 {
	n := limitFor(f.rate, f.duration)
	if f.count > 0 && (n == 0 || f.count < n) {
		n = f.count
	}
	return n
}

// publish publishes what the flags ask for — ticks, or the lines of in —
// and returns how many messages it published. It stops when ctx ends or
// --duration is over, a normal end, not an error. The context it
// publishes under lives until the returned cancel is called: call it
// after closing pub, since a transport may still be sending what was
// published under it.
func (f *pubFlags) publish(ctx context.Context, pub transport.Publisher, in io.Reader) (uint64, context.CancelFunc, error) {
	runCtx, cancel := withDuration(ctx, f.duration)
	var (
		n   uint64
		err error
	)
	if f.ticks {
		n, err = publishTicks(runCtx, pub, newTickGen(f.seed), pacer{start: time.Now(), rate: f.rate, limit: f.limit()})
	} else {
		n, err = publishLines(runCtx, pub, in, f.topic, f.count)
	}
	if runCtx.Err() != nil {
		err = nil // interrupted, or --duration is over: a normal end
	}
	return n, cancel, err
}

// checkMcastTopic refuses a --topic that no multicast message can
// carry (reliable.MaxTopicLen) before anything starts: the publisher
// would refuse it only at the first message.
func (f *pubFlags) checkMcastTopic() error {
	if len(f.topic) > reliable.MaxTopicLen {
		return &oneLineError{fmt.Errorf("--topic: %d bytes; a multicast message's topic is at most %d bytes", len(f.topic), reliable.MaxTopicLen)}
	}
	return nil
}
