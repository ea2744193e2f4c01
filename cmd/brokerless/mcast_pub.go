package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

var mcastPubCmd = command{
	name:     "mcast pub",
	summary:  "publish stdin lines, or synthetic market ticks, to a multicast group",
	synopsis: "--group ADDR:PORT [--iface lo] [--ticks [--rate N]] [flags]",
	about: `
Publishes one stream (a feed) to a UDP multicast group and repairs what
subscribers report lost (NACKs), from a retransmit window.

Without --ticks each line of standard input is one message (the payload is
the line without its newline); at end of input the publisher closes: it
keeps answering NACKs for a moment so subscribers can repair a lost tail,
then tells them the stream ended.

With --ticks it generates synthetic market ticks instead, at --rate
messages per second on an open-loop schedule (a slow moment is made up
for, not lost), for --duration or --count messages or until interrupted.
A tick's topic is its symbol; its payload is a quote such as
"AAPL bid=189.21 ask=189.23 bsz=300 asz=200".

It prints where it publishes on start, and its counters at exit, on
standard error.`,
	examples: `
# Publish lines typed or piped in, on this machine only.
printf 'hello\nworld\n' | brokerless mcast pub --group 239.1.2.3:7000 --ttl 0

# 50,000 ticks per second for 10 seconds; repairs sent only to the
# subscriber that asked.
brokerless mcast pub --group 239.1.2.3:7000 --ticks --rate 50000 --duration 10s --repairs unicast

# A feed only holders of the key can publish to or read; subscribers
# take --key-file too.
head -c 32 /dev/urandom > feed.key
brokerless mcast pub --group 239.1.2.3:7000 --ticks --key-file feed.key

# Exactly 1000 ticks on feed 7, in datagrams of at most 512 bytes.
brokerless mcast pub --group 239.1.2.3:7000 --feed 7 --ticks --count 1000 --mtu 512

# Flow control: never pass the slowest subscriber, and wait for two
# before the first tick (a subscriber stopped for more than 2 s is no
# longer waited for).
brokerless mcast pub --group 239.1.2.3:7000 --ticks --rate 100000 --flow min --flow-min 2`,
	run: runMcastPub,
}

type pubOptions struct {
	mcast   mcastFlags
	pub     pubFlags
	ttl     int
	repairs string
	mtu     int
	flow    flowFlags
}

func runMcastPub(ctx context.Context, inv *invocation) error {
	var o pubOptions
	fs := inv.flags()
	o.mcast.register(fs)
	fs.IntVar(&o.ttl, "ttl", multicast.DefaultTTL, "multicast TTL; 0 keeps datagrams on this host")
	o.pub.register(fs)
	fs.StringVar(&o.repairs, "repairs", "multicast", "send repairs to the whole group (multicast) or only to the subscriber that asked (unicast)")
	fs.IntVar(&o.mtu, "mtu", reliable.DefaultMTU, "largest datagram in bytes, headers included (256..65507)")
	o.flow.register(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	if err := o.pub.checkMcastTopic(); err != nil {
		return err
	}
	cfg, err := o.config(fs.Changed)
	if err != nil {
		return err
	}
	cfg.Logger = inv.log
	pub, err := multicast.NewPublisher(ctx, cfg)
	if err != nil {
		return configError(err, mcastFlagOf)
	}
	fmt.Fprintf(inv.err, "publishing to %v on %s from %v: %s, ttl %d%s%s\n",
		cfg.Group, cfg.Interface, pub.LocalAddr(), mcastStream(pub), o.ttl, authenticated(cfg), flowWait(cfg.Sender.Flow))
	n, cancel, err := o.pub.publish(ctx, pub, inv.in)
	err = closePublisher(pub, err)
	cancel()
	writePublished(inv.err, pub, n, err)
	return err
}

// mcastStream names a multicast publisher's stream: "feed 1, session
// 6889b03fadbf0fc8".
func mcastStream(pub *multicast.Publisher) string {
	id := pub.Stream()
	return fmt.Sprintf("feed %d, session %016x", id.Feed, id.Session)
}

// config checks the options; changed reports whether a flag was given.
func (o *pubOptions) config(changed func(string) bool) (multicast.Config, error) {
	cfg, err := o.mcast.config()
	if err != nil {
		return cfg, err
	}
	if o.mtu == 0 {
		return cfg, usagef("--mtu 0: must be in [256, 65507]")
	}
	if err := o.pub.check(changed); err != nil {
		return cfg, err
	}
	switch o.repairs {
	case "multicast":
	case "unicast":
		cfg.UnicastRepairs = true
	default:
		return cfg, usagef("--repairs %q: want multicast or unicast", o.repairs)
	}
	cfg.TTL, cfg.HostOnly = o.ttl, o.ttl == 0
	cfg.Sender.MTU = o.mtu
	return cfg, o.flow.apply(&cfg, changed)
}

// writePublished prints what a publisher published: a multicast
// publisher's key counters, or the number of messages. err is how
// publishing ended: after an error of the publisher itself, n messages
// were handed to it but not all are known to be delivered.
func writePublished(w io.Writer, pub transport.Publisher, n uint64, err error) {
	if mp, ok := pub.(*multicast.Publisher); ok {
		writePubStats(w, mp.Stats())
		return
	}
	if _, failed := errors.AsType[*publisherError](err); failed {
		fmt.Fprintf(w, "gave %d messages to the publisher, which failed: not all of them are known to be delivered\n", n)
		return
	}
	fmt.Fprintf(w, "published %d messages\n", n)
}

// writePubStats prints the publisher's key counters.
func writePubStats(w io.Writer, s multicast.PublisherStats) {
	fmt.Fprintf(w, "published %d messages in %d datagrams (%.1f per datagram), %d heartbeats; "+
		"NACKs received %d, repairs %d, NCFs %d, lost notices %d, send errors %d",
		s.Messages, s.Datagrams, perDatagram(s.Messages, s.Datagrams), s.Heartbeats,
		s.NacksReceived, s.Repairs, s.Ncfs, s.LostNotices, s.SendErrors)
	if s.Unauthenticated > 0 {
		fmt.Fprintf(w, ", unauthenticated NACKs dropped %d", s.Unauthenticated)
	}
	if s.Replayed > 0 {
		fmt.Fprintf(w, ", replayed control datagrams dropped %d", s.Replayed)
	}
	writeFlowStats(w, s)
	if s.NacksOverBudget+s.RepairsOverBudget > 0 {
		fmt.Fprintf(w, ", over their source's budget: NACKs %d, repairs %d", s.NacksOverBudget, s.RepairsOverBudget)
	}
	fmt.Fprintln(w)
}

func perDatagram(messages, datagrams uint64) float64 {
	if datagrams == 0 {
		return 0
	}
	return float64(messages) / float64(datagrams)
}
