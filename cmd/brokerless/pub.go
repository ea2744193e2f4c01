package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/brokerless/brokerless/multicast"
)

var pubCmd = command{
	name:     "pub",
	summary:  "publish stdin lines, or synthetic market ticks, to any transport URL",
	synopsis: "URL [--ticks [--rate N]] [flags]",
	about: `
Publishes to the transport a URL names (run 'brokerless help urls' for every
scheme and its parameters): a multicast feed (mcast://), a topic of logd or
of any Kafka-protocol broker (logd://, kafka://).

Without --ticks each line of standard input is one message (the payload is
the line without its newline). With --ticks it generates synthetic market
ticks instead, at --rate messages per second on an open-loop schedule (a
slow moment is made up for, not lost), for --duration or --count messages
or until interrupted; a tick's topic is its symbol.

At the end it closes the publisher, which waits until what was published
is delivered as far as the transport promises: handed to the network and
repairable for a while (multicast), or acknowledged by the broker, durably
with acks=all (logd, Kafka). A message's topic, when set, names the Kafka
topic it goes to instead of the URL's.

It prints where it publishes on start (for a URL it binds, such as
zmq+tcp://127.0.0.1:0, the address it got), and its counters at exit, on
standard error. A URL that cannot be used is one line of error and exit
status 2. When the publisher fails (a broker refused a message, or did
not acknowledge everything before the close gave up after 5 s), it says
how many messages it gave the publisher, not that they were published,
and exits with status 1.`,
	examples: `
# Three messages into the topic greetings of a logd on this machine.
printf 'hello\nworld\nbye\n' | brokerless pub logd://127.0.0.1:9092/greetings

# 50,000 ticks per second for 10 seconds on a multicast feed that never
# leaves this host.
brokerless pub 'mcast://239.1.2.3:7000?ttl=0' --ticks --rate 50000 --duration 10s

# 1000 ticks into Kafka, each acknowledged by the leader only. A tick's
# topic is its symbol, so they go to the topics AAPL, MSFT, … (created on
# first use where the broker allows it), not to ticks.
brokerless pub 'kafka://10.0.0.5:9092/ticks?acks=leader' --ticks --count 1000

# Ticks on a ZeroMQ PUB socket bound to port 5556, packed while busy.
brokerless pub 'zmq+tcp://127.0.0.1:5556?pack=on' --ticks --rate 100000`,
	run: runPub,
}

func runPub(ctx context.Context, inv *invocation) error {
	var f pubFlags
	fs := inv.flags()
	f.register(fs)
	args, err := inv.parseArgs(fs, "URL")
	if err != nil {
		return err
	}
	if err := f.check(fs.Changed); err != nil {
		return err
	}
	raw := args[0]
	if u, err := url.Parse(raw); err == nil && schemeFamily(u.Scheme) == "mcast" {
		if err := f.checkMcastTopic(); err != nil {
			return err
		}
	}
	ep, err := openURL(ctx, raw, inv.log)
	if err != nil {
		return err
	}
	pub, err := ep.Publisher(ctx)
	if err != nil {
		return urlError(raw, err)
	}
	if mp, ok := pub.(*multicast.Publisher); ok {
		fmt.Fprintf(inv.err, "publishing to %s from %v: %s (%v)\n", raw, mp.LocalAddr(), mcastStream(mp), pub.Semantics())
	} else {
		fmt.Fprintf(inv.err, "publishing to %s (%v)%s\n", raw, pub.Semantics(), boundSuffix(pub))
	}
	n, cancel, err := f.publish(ctx, pub, inv.in)
	err = closePublisher(pub, err)
	cancel()
	writePublished(inv.err, pub, n, err)
	return err
}
