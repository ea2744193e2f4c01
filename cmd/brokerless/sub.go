package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/brokerless/brokerless/transport/pipe"
)

var subCmd = command{
	name:     "sub",
	summary:  "print, or count, the messages of any transport URL",
	synopsis: "URL [--from POSITION] [--group NAME] [--stats [--interval 1s]] [flags]",
	about: `
Subscribes to what a URL names (run 'brokerless help urls' for every scheme
and its parameters) and prints each message on standard output as one line,
"<seq> <topic> <payload>": seq is the message's position in its stream (a
multicast sequence number, a Kafka offset), the topic is "-" when empty,
the payload is text when it is printable UTF-8 and hexadecimal otherwise.
With --stats messages are not printed; a line of counters is printed every
--interval instead: delivered/s, delivered, gaps and what they lost, and
the latency p50/p99 from publish to receipt (for a multicast feed, its
recovery counters too).

It says on start what it listens on (with mode=bind, the address it
got: port 0 is any free one). Gaps, stream starts and stream ends are
always reported on standard error, one line each: loss is never silent.
So is a logd:// or kafka:// broker lost after the start (the client
retries by itself): a warning line, each kind at most once every 10 s.
One that cannot be reached at start ends the command with status 1.

--from earliest|latest|OFFSET|TIME starts where a transport that replays
(logd://, kafka://) should start (TIME in RFC 3339); it is the URL's from=
parameter. --group NAME makes the subscriber a member of that consumer
group (the URL's group= parameter): it starts from the group's committed
offsets, and each message is acknowledged once it was printed, so a
subscriber killed at any moment loses nothing (at least once: what it
printed but had not yet acknowledged is delivered again). A transport that
cannot replay, or has no groups, refuses the flag with one line of error.

It runs until interrupted, or until --count messages or --duration, or,
with --until-end, until a stream ends. A feed's archive read from logd://
or kafka:// ends a stream at each session its publisher closed (the
recorder's end marker): --until-end stops at the first one.`,
	examples: `
# Everything in the topic prices, from its start, then what comes.
brokerless sub logd://127.0.0.1:9092/prices

# From a time on, as a line of counters every second.
brokerless sub logd://127.0.0.1:9092/prices --from 2025-01-02T15:04:05Z --stats

# As a member of the consumer group audit: at least once, resuming where
# the group left off.
brokerless sub logd://127.0.0.1:9092/prices --group audit

# A multicast feed, with what is still in the publisher's window.
brokerless sub 'mcast://239.1.2.3:7000?join=earliest'

# Two topic prefixes of a ZeroMQ publisher (libzmq's or brokerless').
brokerless sub 'zmq+tcp://127.0.0.1:5556?subscribe=AAPL&subscribe=MSFT'`,
	run: runSub,
}

func runSub(ctx context.Context, inv *invocation) error {
	var (
		f           subFlags
		from, group string
	)
	fs := inv.flags()
	fs.StringVar(&from, "from", "", "where to start: earliest, latest, an offset or an RFC 3339 time (transports that replay)")
	fs.StringVar(&group, "group", "", "consume as a member of this consumer group, acknowledging what was printed (transports with groups)")
	f.register(fs)
	args, err := inv.parseArgs(fs, "URL")
	if err != nil {
		return err
	}
	if err := f.check(fs.Changed); err != nil {
		return err
	}
	raw := args[0]
	if fs.Changed("from") {
		if raw, err = withParam(raw, "from", from, "--from", "cannot replay"); err != nil {
			return err
		}
	}
	if fs.Changed("group") {
		if raw, err = withParam(raw, "group", group, "--group", "has no consumer groups"); err != nil {
			return err
		}
	}
	ep, err := openURL(ctx, raw, inv.log)
	if err != nil {
		return err
	}
	sub, err := ep.Subscriber(ctx)
	if err != nil {
		return urlError(raw, err)
	}
	line := fmt.Sprintf("listening on %s (%v)%s", raw, sub.Semantics(), boundSuffix(sub))
	if pipe.Acknowledger(sub) != nil {
		line += ", acknowledging each message once printed"
	}
	fmt.Fprintln(inv.err, line)
	return errors.Join(f.subscribe(ctx, inv, sub), sub.Close())
}
