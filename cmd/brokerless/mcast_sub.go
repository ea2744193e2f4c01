package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

var mcastSubCmd = command{
	name:     "mcast sub",
	summary:  "print, or count, the messages of a multicast feed",
	synopsis: "--group ADDR:PORT [--iface lo] [--archive URL [--join earliest|seq:N|time:T]] [--stats [--interval 1s]] [flags]",
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

--spin D makes the subscriber poll its socket for up to D, without
sleeping, each time it finds it empty (as Aeron's busy-spin idle
strategies do): a thread woken from sleep takes tens of microseconds, more
than the gap between messages of a busy feed, so spinning lowers the
latency of a busy feed, for a core's CPU while it is busy. At most 1s;
0 (the default) sleeps at once.

--simulate-loss drops that fraction of the received datagrams (data and
repairs alike) on purpose, with a seeded generator, to rehearse loss.

--archive names the log a recorder writes the feed to (brokerless mcast
record, or brokerless pipe mcast://... logd://...). The subscriber then
gets from it what the publisher can no longer give: a loss beyond the
publisher's retransmit window, and the tail of a session whose publisher
crashed, are read from the archive before anything is reported lost, and
a gap means the archive lacks it too (with the archive's reason). With
--join earliest, seq:N (sequence number N of the feed's current session;
nothing before it is delivered, live or archived) or time:T (RFC 3339;
the first archived message published at or after T, or, for a T past
the archive's last record, the archive's end and the live feed) it
starts with the feed's history from the archive,
and switches to the live feed where the archive reaches it, with no gap
and no duplicate; if the live feed outruns the replay, it says so and
reads on from the archive until it catches up. The summary at exit says
how many messages came from the archive.`,
	examples: `
# Print every message of feed 1, across publisher restarts, until
# interrupted.
brokerless mcast sub --group 239.1.2.3:7000

# Print what one publisher sends, and exit when it closes its stream.
brokerless mcast sub --group 239.1.2.3:7000 --until-end

# A line of counters every second, with 5% of the datagrams dropped on
# purpose to watch them being recovered.
brokerless mcast sub --group 239.1.2.3:7000 --stats --simulate-loss 0.05

# Lower latency for a busy feed: poll an empty socket for up to 50 µs
# before sleeping (a core's CPU while the feed is busy).
brokerless mcast sub --group 239.1.2.3:7000 --spin 50us --stats

# Take the 100 messages still in the publisher's window, then stop.
brokerless mcast sub --group 239.1.2.3:7000 --join earliest --count 100

# The feed's whole history from its archive (see mcast record), then live;
# what the publisher cannot repair, from the archive.
brokerless mcast sub --group 239.1.2.3:7000 --archive logd://127.0.0.1:9092/ticks --join earliest`,
	run: runMcastSub,
}

type subOptions struct {
	mcast   mcastFlags
	sub     subFlags
	loss    float64
	seed    int64
	join    string
	archive string
	spin    time.Duration
}

func runMcastSub(ctx context.Context, inv *invocation) error {
	var o subOptions
	fs := inv.flags()
	o.mcast.register(fs)
	o.sub.register(fs)
	fs.Float64Var(&o.loss, "simulate-loss", 0, "drop this fraction (0..1) of received datagrams on purpose")
	fs.Int64Var(&o.seed, "seed", 1, "seed of --simulate-loss")
	fs.StringVar(&o.join, "join", "live", "where to start: live (the next message) or earliest (what is still in the publisher's window; with --archive, the archive's oldest); with --archive also seq:N or time:T (RFC 3339)")
	fs.DurationVar(&o.spin, "spin", 0, "poll an empty socket this long, without sleeping, before waiting (lower latency for a busy feed, a core's CPU while it is busy), at most 1s; Linux only")
	fs.StringVar(&o.archive, "archive", "", "the log a recorder writes the feed to, e.g. logd://127.0.0.1:9092/ticks: history and what the publisher cannot repair come from there")
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
	fmt.Fprintf(inv.err, "listening on %v on %s: feed %d, join %s, receive buffer %d bytes granted%s%s\n",
		cfg.Group, cfg.Interface, cfg.Feed, o.join, sub.Stats().RecvBuffer, authenticated(cfg), archived(cfg))
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
	if o.spin < 0 || o.spin > time.Second {
		return cfg, usagef("--spin %v: want a duration from 0 to 1s, e.g. 50us", o.spin)
	}
	cfg.Spin = o.spin
	if o.archive != "" {
		if err := checkArchive(o.archive); err != nil {
			return cfg, err
		}
		cfg.Archive.URL = o.archive
		if cfg.Archive.Join, err = multicast.ParseJoin(o.join); err != nil {
			return cfg, usagef("--join %q: want live, earliest, seq:N or time:T (RFC 3339, e.g. time:2025-01-02T15:04:05Z)", o.join)
		}
	} else {
		switch o.join {
		case "live":
		case "earliest":
			cfg.Receiver.Join = reliable.JoinEarliest
		default:
			if _, err := multicast.ParseJoin(o.join); err == nil {
				return cfg, usagef("--join %s needs --archive: without one a subscriber starts live, or with earliest at what the publisher's window holds", o.join)
			}
			return cfg, usagef("--join %q: want live or earliest; with --archive also seq:N or time:T", o.join)
		}
	}
	if o.loss > 0 {
		faults := faultnet.Faults{Loss: o.loss, Seed: o.seed}
		cfg.Filter = func() (multicast.DatagramFilter, error) { return faultnet.NewFilter(faults) }
	}
	return cfg, nil
}

// writeSubStats prints a subscriber's key counters at exit: the
// messages and gaps it delivered, and its engine's counters.
func writeSubStats(w io.Writer, received, gaps, lost uint64, s multicast.SubscriberStats) {
	r := s.ReceiverStats
	fmt.Fprintf(w, "received %d messages; recovered %d, duplicates %d, NACKs sent %d (suppressed %d), gaps %d (%d lost)",
		received, r.Recovered, r.Duplicates, r.NacksSent, r.Suppressed, gaps, lost)
	if s.FilterDrops > 0 {
		fmt.Fprintf(w, ", dropped on purpose %d", s.FilterDrops)
	}
	if a := s.Archive; a.Replays > 0 {
		fmt.Fprintf(w, "; from the archive %d messages and %d gaps (%d replays, %d back to live; the publisher could not repair %d ranges, %d messages",
			a.FromArchive, a.ArchiveGaps, a.Replays, a.Merges, r.Gaps, r.GapSeqs)
		if a.LiveDropped > 0 {
			fmt.Fprintf(w, ", %d live events re-read from it", a.LiveDropped)
		}
		if a.OpenGaps > 0 {
			fmt.Fprintf(w, ", %d session tails of unknown length lost (%d of their live messages came too late)", a.OpenGaps, a.LateLive)
		}
		fmt.Fprint(w, ")")
	}
	if r.Unauthenticated > 0 {
		fmt.Fprintf(w, ", unauthenticated %d", r.Unauthenticated)
	}
	if r.RepairsBeforeStart > 0 {
		fmt.Fprintf(w, ", repairs before the stream's start %d", r.RepairsBeforeStart)
	}
	if n := r.WrongSource + r.Jumps + r.EndsRejected + r.RestartsDeferred; n > 0 {
		fmt.Fprintf(w, ", not believed %d (wrong source %d, jumps %d, ENDs %d, restarts %d)",
			n, r.WrongSource, r.Jumps, r.EndsRejected, r.RestartsDeferred)
	}
	fmt.Fprintln(w)
}

// checkArchive checks that raw is a log URL an archive can be read
// from, before anything starts.
func checkArchive(raw string) error {
	ep, err := transport.Open(context.Background(), raw)
	if err != nil {
		return &oneLineError{fmt.Errorf("--archive: %w", urlError(raw, err))}
	}
	if _, ok := ep.(transport.LogReader); !ok {
		return &oneLineError{fmt.Errorf("--archive %s: not a log (an archive is a logd:// or kafka:// topic)", raw)}
	}
	return nil
}

// archived is what the start line says of the archive.
func archived(cfg multicast.Config) string {
	if cfg.Archive.URL == "" {
		return ""
	}
	return ", archive " + cfg.Archive.URL
}
