package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/brokerless/brokerless/transport/zmq"
)

var zmqProxyCmd = command{
	name:     "zmq proxy",
	summary:  "a ZeroMQ XSUB/XPUB forwarder whose subscriptions travel, counting what passes",
	synopsis: "--xsub ADDR --xpub ADDR [--hwm N] [--slow drop|disconnect] [--interval DURATION]",
	about: `
Forwards what the publishers that connect to its XSUB side (--xsub) send
to the subscribers that connect to its XPUB side (--xpub), as libzmq's
zmq_proxy between an XSUB and an XPUB socket does: the subscriptions of
the subscribers travel to the publishers (the first to a prefix, and the
last unsubscription), so a publisher sends only what someone takes, and a
subscription made after start-up reaches the publishers. Publishers and
subscribers may be libzmq sockets (PUB, XPUB, SUB, XSUB) or brokerless
zmq+tcp:// URLs (mode=connect for a publisher).

Frames pass untouched: a brokerless publisher's header frames travel end
to end, so its subscribers still see every gap. Each subscriber has its
own queue of --hwm messages; when it is full, --slow drop drops what does
not fit and counts it (the subscriber reports the hole as a gap), --slow
disconnect closes that subscriber's connection. A slow subscriber never
slows the others.

ADDR is tcp://HOST:PORT (HOST * for every address; PORT 0 for any free
one), HOST:PORT, or ipc://PATH; each flag may be repeated. It prints where
it listens on start, its counters every --interval (if given) and at the
end, on standard error. It runs until interrupted (SIGINT, SIGTERM).`,
	examples: `
# Publishers connect to 5559, subscribers to 5560.
brokerless zmq proxy --xsub tcp://*:5559 --xpub tcp://*:5560

# A publisher and a subscriber through it.
brokerless pub 'zmq+tcp://127.0.0.1:5559?mode=connect' --ticks --rate 1000
brokerless sub 'zmq+tcp://127.0.0.1:5560?subscribe=AAPL'

# Counters every 10 s; a subscriber 10,000 messages behind is disconnected.
brokerless zmq proxy --xsub 127.0.0.1:5559 --xpub 127.0.0.1:5560 \
    --hwm 10000 --slow disconnect --interval 10s`,
	run: runZmqProxy,
}

func runZmqProxy(ctx context.Context, inv *invocation) error {
	var (
		xsub, xpub []string
		hwm        int
		slow       string
		interval   time.Duration
	)
	fs := inv.flags()
	fs.StringArrayVar(&xsub, "xsub", nil, "listen for publishers on ADDR (repeatable)")
	fs.StringArrayVar(&xpub, "xpub", nil, "listen for subscribers on ADDR (repeatable)")
	fs.IntVar(&hwm, "hwm", zmq.DefaultSubscriberQueue, "messages queued per subscriber")
	fs.StringVar(&slow, "slow", "drop", "what a full subscriber queue does: drop (and count) or disconnect")
	fs.DurationVar(&interval, "interval", 0, "print the counters this often (default: only at the end)")
	if err := inv.parse(fs); err != nil {
		return err
	}
	cfg := zmq.ProxyConfig{}
	var err error
	if cfg.XSubBind, err = zmqEndpoints("xsub", xsub); err != nil {
		return err
	}
	if cfg.XPubBind, err = zmqEndpoints("xpub", xpub); err != nil {
		return err
	}
	switch {
	case len(xsub) == 0:
		return usagef("--xsub is required: where publishers connect")
	case len(xpub) == 0:
		return usagef("--xpub is required: where subscribers connect")
	case interval < 0:
		return usagef("--interval %v: want a positive duration", interval)
	}
	if err := checkAtLeast("hwm", hwm, 1); err != nil {
		return err
	}
	cfg.Config.SubscriberQueue = hwm
	switch slow {
	case "drop":
	case "disconnect":
		cfg.Config.Slow = zmq.Disconnect
	default:
		return usagef("--slow %q: want drop or disconnect", slow)
	}
	px, err := zmq.NewProxy(ctx, cfg)
	if err != nil {
		return zmqConfigError(err, map[string][]string{"xsub": cfg.XSubBind, "xpub": cfg.XPubBind}, map[string]string{"SubscriberQueue": "hwm"})
	}
	fmt.Fprintf(inv.err, "proxy: publishers connect to %s (XSUB), subscribers to %s (XPUB)\n", zmqAddrs(px.XSubAddrs()), zmqAddrs(px.XPubAddrs()))
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for done := false; !done; {
		select {
		case <-tick:
			writeProxyStats(inv.err, px.Stats())
		case <-ctx.Done():
			done = true
		}
	}
	st := px.Stats()
	px.Close()
	writeProxyStats(inv.err, st)
	return nil
}

// writeProxyStats prints a proxy's counters as one line.
func writeProxyStats(w io.Writer, s zmq.ProxyStats) {
	fmt.Fprintf(w, "proxy: forwarded %d messages (%d bytes); dropped %d for slow subscribers, %d disconnected; subscriptions +%d -%d (%d prefixes held, %d refused); %d publishers, %d subscribers connected\n",
		s.Forwarded, s.ForwardedBytes, s.Dropped, s.SlowDisconnects, s.Subscribed, s.Unsubscribed, s.Prefixes, s.RefusedSubscriptions, s.Publishers, s.Subscribers)
}
