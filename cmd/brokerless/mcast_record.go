package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/pipe"
)

var mcastRecordCmd = command{
	name:     "mcast record",
	summary:  "record a multicast feed into a logd or Kafka topic: its archive",
	synopsis: "--group ADDR:PORT --to logd://HOST:PORT/TOPIC [--feed N] [--iface lo] [flags]",
	about: `
Joins a multicast feed as one more subscriber and appends every message to
a log topic, with its origin (feed, session, sequence number, publish time,
topic) in one binary header, brokerless.origin, and its key, headers and
payload as they were: the feed's archive. Subscribers that name it (mcast
sub --archive, or archive= in an mcast:// URL) get from it the history a
late joiner asks for, what the publisher can no longer repair, and the
tail of a session whose publisher crashed. Any Kafka client reads it too.

The recorder recovers its own losses through NACKs like any subscriber. A
range it could not get is written as a gap marker (a record whose
brokerless.origin header has the gap flag, the range and the reason), so
the archive never hides a hole. Restarted, it resumes after what the topic
holds: it writes nothing twice, and a gap marker for exactly what the
publisher no longer held when it came back. The feed goes to one partition of the topic, which keeps its
order: the one --to names with partition=, else partition 0. Several
recorders, each into its own logd, may record one feed.

Without flow control the feed goes at its own pace, and a recorder stalled
for longer than the publisher's window (its logd slow to acknowledge, its
machine busy) loses what left the window, marked as a gap. With
--flow-tag N the recorder reports tag N, and a feed published with
--flow tagged --flow-tag N waits for it, as Aeron's archive is a required
receiver: the archive then misses nothing, and the feed goes no faster
than the recorder writes (a recorder silent for the publisher's
--flow-timeout is no longer waited for).

It is 'brokerless pipe' from the feed's mcast:// URL (with join=earliest,
so that a restart gets the publisher's window) to --to: see its help for
--max-in-flight, and for how it acknowledges. It runs until interrupted, or
for --duration, and prints its counters on standard error at exit, and
every --interval if given.`,
	examples: `
# Record feed 1 of a group into the topic ticks of a logd on this machine.
brokerless logd --dir /tmp/logd &
brokerless mcast record --group 239.1.2.3:7000 --to logd://127.0.0.1:9092/ticks

# A feed that waits for its recorder: the archive misses nothing.
brokerless mcast record --group 239.1.2.3:7000 --to logd://127.0.0.1:9092/ticks --flow-tag 1 &
brokerless mcast pub --group 239.1.2.3:7000 --ticks --rate 100000 --flow tagged --flow-tag 1 --flow-min 1

# Read it back with any Kafka client, or as the feed it was.
kcat -C -b 127.0.0.1:9092 -t ticks -f '%h %s\n'
brokerless sub logd://127.0.0.1:9092/ticks`,
	run: runMcastRecord,
}

func runMcastRecord(ctx context.Context, inv *invocation) error {
	var (
		mf       mcastFlags
		to       string
		cfg      pipe.Config
		interval time.Duration
		duration time.Duration
		flowTag  uint64
	)
	fs := inv.flags()
	mf.register(fs)
	fs.StringVar(&to, "to", "", "the log topic to record into: logd://HOST:PORT/TOPIC or kafka://… (required)")
	inFlightFlags(fs, &cfg, "the feed", "the topic")
	fs.DurationVar(&interval, "interval", 0, "print the counters this often (0: only at exit)")
	fs.DurationVar(&duration, "duration", 0, "stop after this long (0: when interrupted)")
	fs.Uint64Var(&flowTag, "flow-tag", 0, "report this flow-control tag: a feed published with --flow tagged --flow-tag N waits for the recorder, which then loses nothing to the feed's pace (0: none)")
	if err := inv.parse(fs); err != nil {
		return err
	}
	if fs.Changed("flow-tag") && (flowTag == 0 || flowTag > 1<<63) {
		return usagef("--flow-tag %d: want 1 to 2^63", flowTag)
	}
	mc, err := mf.config()
	if err != nil {
		return err
	}
	switch {
	case to == "":
		return usagef("--to is required, e.g. --to logd://127.0.0.1:9092/ticks")
	}
	if err := checkInFlight(cfg); err != nil {
		return err
	}
	if err := nonNegative("interval", interval); err != nil {
		return err
	}
	if err := nonNegative("duration", duration); err != nil {
		return err
	}
	q := url.Values{}
	q.Set("iface", mc.Interface)
	q.Set("feed", fmt.Sprint(mc.Feed))
	q.Set("join", "earliest")
	if mf.keyFile != "" {
		q.Set("keyfile", mf.keyFile)
	}
	if flowTag > 0 {
		q.Set("flow-tag", fmt.Sprint(flowTag))
	}
	from := (&url.URL{Scheme: "mcast", Host: mc.Group.String(), RawQuery: q.Encode()}).String()
	if to, err = recordTarget(to); err != nil {
		return err
	}
	fmt.Fprintf(inv.err, "recording feed %d of %v on %s into %s\n", mc.Feed, mc.Group, mc.Interface, to)
	return runPipeURLs(ctx, inv, from, to, cfg, interval, duration)
}

// recordTarget checks that raw is a log a pipe can resume from, and
// names partition 0 when it names none and its scheme takes partition=.
func recordTarget(raw string) (string, error) {
	ep, err := transport.Open(context.Background(), raw)
	if err != nil {
		return "", &oneLineError{fmt.Errorf("--to: %w", urlError(raw, err))}
	}
	if _, ok := ep.(transport.TailReader); !ok {
		return "", &oneLineError{fmt.Errorf("--to %s: not a log (a recorder writes to a logd:// or kafka:// topic)", raw)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw, nil
	}
	s, _ := transport.Describe(u.Scheme)
	q := u.Query()
	if _, ok := s.Param("partition"); ok && !q.Has("partition") {
		q.Set("partition", "0")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return raw, nil
}
