package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/pipe"
)

// subFlags are the flags every subscribing command (sub, mcast sub)
// shares: how to show what arrives, and when to stop.
type subFlags struct {
	stats    bool
	interval time.Duration
	count    uint64
	duration time.Duration
	untilEnd bool
}

func (f *subFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.stats, "stats", false, "print a line of counters every --interval instead of the messages")
	fs.DurationVar(&f.interval, "interval", time.Second, "time between two lines of counters (with --stats)")
	fs.Uint64Var(&f.count, "count", 0, "stop after this many messages (0: no limit)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: when interrupted)")
	fs.BoolVar(&f.untilEnd, "until-end", false, "stop when a stream ends (its publisher closed it, or it fell silent)")
}

// check checks the flags; changed reports whether a flag was given.
func (f *subFlags) check(changed func(string) bool) error {
	switch {
	case f.interval <= 0:
		return usagef("--interval %v: want a positive duration, e.g. 1s", f.interval)
	case changed("interval") && !f.stats:
		return usagef("--interval needs --stats")
	}
	return nonNegative("duration", f.duration)
}

// subscribe prints, or counts, what sub receives until the flags say to
// stop or ctx ends, then prints a summary on standard error. A
// subscriber that can be acknowledged is acknowledged as it goes, each
// message once it was printed (or counted).
func (f *subFlags) subscribe(ctx context.Context, inv *invocation, sub transport.Subscriber) error {
	runCtx, cancel := withDuration(ctx, f.duration)
	defer cancel()
	ms, _ := sub.(*multicast.Subscriber)
	var out sink
	switch {
	case f.stats && ms != nil:
		out = newStatsSink(inv.out, f.interval, ms.Stats)
	case f.stats:
		out = newStatsSink(inv.out, f.interval, nil)
	default:
		out = newLineSink(inv.out)
	}
	r := &receiver{sub: sub, out: out, events: inv.err, limit: f.count, untilEnd: f.untilEnd}
	r.acker = pipe.Acknowledger(sub)
	n, err := r.run(runCtx)
	err = errors.Join(err, out.close())
	if ms != nil {
		writeSubStats(inv.err, n, r.gaps, r.lost, ms.Stats())
	} else {
		fmt.Fprintf(inv.err, "received %d messages; gaps %d (%d lost)\n", n, r.gaps, r.lost)
	}
	return err
}

// ackEvery is how often a subscriber that can be acknowledged writes out
// what it printed and acknowledges it, while messages arrive.
const ackEvery = lineFlush

// receiver hands what a subscriber receives to a sink and reports gaps
// and stream starts and ends on events, one line each.
type receiver struct {
	sub      transport.Subscriber
	acker    transport.Acknowledger // nil: the subscriber has none
	out      sink
	events   io.Writer
	limit    uint64 // messages; 0: no limit
	untilEnd bool   // stop when a stream ends

	n          uint64
	gaps, lost uint64
	unacked    map[transport.StreamID]uint64
	settled    time.Time
	// period ends when acknowledging what was shown is due; endPeriod
	// releases it.
	period    context.Context
	endPeriod context.CancelFunc
	// own are the streams the subscriber started or delivered a message
	// of: a gap of another (a gap marker a log delivers as the gap of the
	// stream it stands for) is acknowledged with what follows it.
	own map[transport.StreamID]bool
}

// run receives until ctx ends, limit messages arrived or, with untilEnd,
// a stream ended, and returns how many messages it received; the end of
// ctx is a normal end, not an error. Before it returns, what was received
// is written out and acknowledged.
func (r *receiver) run(ctx context.Context) (uint64, error) {
	r.unacked, r.own = map[transport.StreamID]uint64{}, map[transport.StreamID]bool{}
	r.endPeriod = func() {}
	r.settled = time.Now()
	err := r.loop(ctx)
	return r.n, errors.Join(err, r.settle())
}

func (r *receiver) loop(ctx context.Context) error {
	defer func() { r.endPeriod() }()
	for r.limit == 0 || r.n < r.limit {
		rctx := r.receiveContext(ctx)
		ev, err := r.sub.Receive(rctx)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case rctx != ctx && errors.Is(err, context.DeadlineExceeded):
			if err := r.settle(); err != nil {
				return err
			}
			continue
		default:
			return err
		}
		switch ev.Kind {
		case transport.EventMessage:
			if err := r.out.message(&ev.Message, time.Now()); err != nil {
				return err
			}
			r.n++
			r.own[ev.Message.Stream] = true
			r.done(ev.Message.Stream, ev.Message.Seq)
		case transport.EventGap:
			r.gaps++
			if ev.Gap.Lost() {
				r.lost += ev.Gap.Len()
			}
			r.out.gap(&ev.Gap)
			if r.own[ev.Gap.Stream] {
				r.done(ev.Gap.Stream, ev.Gap.To)
			}
			fallthrough
		default:
			switch {
			case ev.Kind == transport.EventStreamStart:
				r.own[ev.Start.Stream] = true
			case ev.Kind == transport.EventStreamEnd && ev.End.Stream.Topic == "":
				// A feed's session ends for good, and a feed has one
				// at each publisher restart (anyone may start one on a
				// group without a key): own would grow with every
				// session ever seen. A log's partitions are few.
				delete(r.own, ev.End.Stream)
			}
			if err := r.out.flush(); err != nil {
				return err
			}
			fmt.Fprintln(r.events, describe(&ev))
			if r.untilEnd && ev.Kind == transport.EventStreamEnd {
				return nil
			}
		}
		if len(r.unacked) > 0 && time.Since(r.settled) >= ackEvery {
			if err := r.settle(); err != nil {
				return err
			}
		}
	}
	return nil
}

// done notes that the event at stream's position seq was shown, to be
// acknowledged once written out.
func (r *receiver) done(stream transport.StreamID, seq uint64) {
	if r.acker != nil {
		r.unacked[stream] = seq
	}
}

// receiveContext is the context to receive under: while shown messages
// wait to be acknowledged, one that ends when the next settling is due,
// so that a subscriber with nothing more to receive still acknowledges
// what it showed.
func (r *receiver) receiveContext(ctx context.Context) context.Context {
	if len(r.unacked) == 0 {
		return ctx
	}
	if r.period == nil {
		r.period, r.endPeriod = context.WithDeadline(ctx, r.settled.Add(ackEvery))
	}
	return r.period
}

// settle writes out what was shown and acknowledges it.
func (r *receiver) settle() error {
	r.endPeriod()
	r.period, r.endPeriod = nil, func() {}
	r.settled = time.Now()
	if len(r.unacked) == 0 {
		return nil
	}
	if err := r.out.flush(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for s, seq := range r.unacked {
		if err := r.acker.Ack(ctx, s, seq); err != nil {
			return fmt.Errorf("acknowledging %s up to %d: %w", s, seq, err)
		}
		delete(r.unacked, s)
	}
	return nil
}
