package main

import (
	"context"
	"fmt"
	"io"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport/faultnet"
)

var mcastSubCmd = command{
	name:     "mcast sub",
	summary:  "print, or count, the messages of a multicast feed",
	synopsis: "--group ADDR:PORT [--iface lo] [--stats [--interval 1s]] [flags]",
	about: `
Joins a multicast group and receives one feed: messages in order, lost
datagrams recovered by NACK, and whatever cannot be recovered reported as
a gap. Nothing is lost silently.

Each message is printed on standard output as one line,
"<seq> <topic> <payload>": the topic is "-" when empty, the payload is
text when it is printable UTF-8 and hexadecimal otherwise. With --stats
messages are not printed; instead a line of counters is printed every
--interval: delivered/s and delivered; recovered: messages that arrived
after their loss was noticed, by repair or late (a message split over
several datagrams counts once per fragment); duplicates: copies dropped,
counted the same way; NACKs sent and NACKs suppressed; gaps and the
sequence numbers they lost; and the latency p50/p99 from publish to
receipt over the interval (meaningful when the publisher's clock is this
machine's).

Gaps, stream starts and stream ends are always reported on standard
error, one line each, for example
"gap 1/4f0c9a2e5b1d7c38 seq 100..120 (21 lost): recovery timed out".

It runs until interrupted, or until --count messages or --duration. A
feed outlives its publishers (a restarted publisher continues it as a new
stream), so the end of a stream does not stop it; --until-end does: it
exits once a stream ends, closed by its publisher or silent for 5s.

--simulate-loss drops that fraction of the received datagrams (data and
repairs alike) on purpose, with a seeded generator, to rehearse loss.`,
	examples: `
# Print every message of feed 1, across publisher restarts, until
# interrupted.
brokerless mcast sub --group 239.1.2.3:7000

# Print what one publisher sends, and exit when it closes its stream.
brokerless mcast sub --group 239.1.2.3:7000 --until-end

# A line of counters every second, with 5% of the datagrams dropped on
# purpose to watch them being recovered.
brokerless mcast sub --group 239.1.2.3:7000 --stats --simulate-loss 0.05

# Take the 100 messages still in the publisher's window, then stop.
brokerless mcast sub --group 239.1.2.3:7000 --join earliest --count 100`,
	run: runMcastSub,
}

type subOptions struct {
	mcast mcastFlags
	sub   subFlags
	loss  float64
	seed  int64
	join  string
}

func runMcastSub(ctx context.Context, inv *invocation) error {
	var o subOptions
	fs := inv.flags()
	o.mcast.register(fs)
	o.sub.register(fs)
	fs.Float64Var(&o.loss, "simulate-loss", 0, "drop this fraction (0..1) of received datagrams on purpose")
	fs.Int64Var(&o.seed, "seed", 1, "seed of --simulate-loss")
	fs.StringVar(&o.join, "join", "live", "where to start in a stream already running: live (its next message) or earliest (what is still in the publisher's window)")
	if err := inv.parse(fs); err != nil {
		return err
	}
	cfg, err := o.config(fs.Changed)
	if err != nil {
		return err
	}
	cfg.Logger = inv.log
	sub, err := multicast.NewSubscriber(ctx, cfg)
	if err != nil {
		return configError(err, mcastFlagOf)
	}
	defer sub.Close()
	fmt.Fprintf(inv.err, "listening on %v on %s: feed %d, join %s, receive buffer %d bytes granted%s\n",
		cfg.Group, cfg.Interface, cfg.Feed, o.join, sub.Stats().RecvBuffer, authenticated(cfg))
	if o.loss > 0 {
		fmt.Fprintf(inv.err, "dropping %g%% of received datagrams on purpose (seed %d)\n", 100*o.loss, o.seed)
	}
	return o.sub.subscribe(ctx, inv, sub)
}

// config checks the options; changed reports whether a flag was given.
func (o *subOptions) config(changed func(string) bool) (multicast.Config, error) {
	cfg, err := o.mcast.config()
	if err != nil {
		return cfg, err
	}
	switch {
	case !(o.loss >= 0 && o.loss <= 1):
		return cfg, usagef("--simulate-loss %v: want a fraction between 0 and 1, e.g. 0.05", o.loss)
	case changed("seed") && o.loss == 0:
		return cfg, usagef("--seed needs --simulate-loss")
	}
	if err := o.sub.check(changed); err != nil {
		return cfg, err
	}
	switch o.join {
	case "live":
	case "earliest":
		cfg.Receiver.Join = reliable.JoinEarliest
	default:
		return cfg, usagef("--join %q: want live or earliest", o.join)
	}
	if o.loss > 0 {
		faults := faultnet.Faults{Loss: o.loss, Seed: o.seed}
		cfg.Filter = func() (multicast.DatagramFilter, error) { return faultnet.NewFilter(faults) }
	}
	return cfg, nil
}

// writeSubStats prints a subscriber's key counters at exit.
func writeSubStats(w io.Writer, received uint64, s multicast.SubscriberStats) {
	r := s.ReceiverStats
	fmt.Fprintf(w, "received %d messages; recovered %d, duplicates %d, NACKs sent %d (suppressed %d), gaps %d (%d lost)",
		received, r.Recovered, r.Duplicates, r.NacksSent, r.Suppressed, r.Gaps, r.GapSeqs)
	if s.FilterDrops > 0 {
		fmt.Fprintf(w, ", dropped on purpose %d", s.FilterDrops)
	}
	if r.Unauthenticated > 0 {
		fmt.Fprintf(w, ", unauthenticated %d", r.Unauthenticated)
	}
	if n := r.WrongSource + r.Jumps + r.EndsRejected + r.RestartsDeferred; n > 0 {
		fmt.Fprintf(w, ", not believed %d (wrong source %d, jumps %d, ENDs %d, restarts %d)",
			n, r.WrongSource, r.Jumps, r.EndsRejected, r.RestartsDeferred)
	}
	fmt.Fprintln(w)
}
