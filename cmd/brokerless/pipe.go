package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/pipe"
)

var pipeCmd = command{
	name:     "pipe",
	summary:  "forward every message of one transport URL into another, at least once, gaps as markers",
	synopsis: "FROM TO [--max-in-flight N] [--interval D] [flags]",
	about: `
Subscribes to FROM and publishes every message to TO (any two transport
URLs: run 'brokerless help urls'), keeping its key, headers and payload and
adding its origin as one binary header, brokerless.origin: the stream in
FROM, its position there, its publish time and its topic, if it had one
(TO's URL decides where a message goes, so the topic travels in the
header; the layout is transport.HeaderOrigin's). A gap in FROM is written
to TO as a gap marker, a record whose brokerless.origin header has the gap
flag, the range and the reason, so TO's readers see the hole too: a
logd:// subscriber reads it back as the gap itself. A feed session its
publisher closed is written as an end marker, read back as its end.

FROM is acknowledged only once TO has accepted the message — durably where
TO is durable (a logd or Kafka topic with acks=all) — cumulatively and in
order, so a pipe killed at any moment loses nothing: what it had not
acknowledged is delivered to it again. Up to --max-in-flight messages
(and --max-in-flight-bytes of them) are on their way at once, so the
pipe keeps up with its source through TO's round trips and pauses. A
consumer group commits its acknowledgements every few seconds, so a
killed pipe is given again what it wrote in its last seconds: where TO
is a log (logd://, kafka://) that keeps each FROM stream in one
partition, the pipe reads TO's last records on start, and what TO was
given since when a rebalance gives it a partition (or gives one back),
and drops what TO already holds, acknowledging it, so nothing is written
twice (a FROM stream TO holds out of order, as two pipes from two
clusters whose topics share a name write it, is not resumed: it is
written at least once).

A FROM that cannot be acknowledged (a multicast feed) is resumed from TO
instead: on start the pipe reads TO's last records, drops what FROM sends
that TO already holds, and where FROM no longer holds the messages after
the last one written (the pipe was down longer than the publisher's
retransmit window), writes a gap marker with that exact range and the
reason "the pipe feeding this stream was down". For this the pipe reads
a multicast FROM with join=earliest, so a restart replays the publisher's
window. TO must be a log (logd://, kafka://) whose topic keeps each FROM
stream in one partition (logd creates topics with one). Nothing fences a
killed pipe's last writes: one that TO shows only after the restarted
pipe read its tail (a logd still fsyncing it, a Kafka still replicating
it) is not seen, and the restarted pipe's gap marker covers those
messages too, though they are in TO. Restarting a killed pipe a second
later avoids it.

A TO that is FROM (the same topic of the same brokers, the same
multicast feed, the same ZeroMQ endpoints, however spelt; host names are
not resolved) is refused: the pipe would read back what it writes,
without end.

A message TO refuses (too large for it, say) stops the pipe, with an error
that names the FROM stream and position refused; nothing from there on is
acknowledged, so a restarted pipe stops there again until TO takes it.

While TO accepts nothing for 10s with messages waiting (TO down, or
retrying one it will never take, as a logd whose --max-request-bytes it
exceeds), the pipe says so on standard error, naming the oldest FROM
position waiting, and again when TO accepts anew; what waits is bounded
by --max-in-flight and --max-in-flight-bytes.

It runs until interrupted, or for --duration; on SIGINT or SIGTERM it
waits (at most 5s) for TO to accept what is in flight, and acknowledges
it, then closes both ends (a logd or Kafka end may take up to 5s more);
a second signal ends it at once. It prints its counters on standard error at exit, and every
--interval if given.`,
	examples: `
# Record a multicast feed into the topic ticks of a logd on this machine.
brokerless pipe 'mcast://239.1.2.3:7000?ttl=0' logd://127.0.0.1:9092/ticks

# Copy a topic into another broker's topic as the consumer group mirror:
# restarted, it resumes where the group's acknowledgements left off.
brokerless pipe 'logd://127.0.0.1:9092/orders?group=mirror' kafka://10.0.0.5:9092/orders

# Counters every second while it runs.
brokerless pipe 'mcast://239.1.2.3:7000?ttl=0' logd://127.0.0.1:9092/ticks --interval 1s`,
	run: runPipe,
}

func runPipe(ctx context.Context, inv *invocation) error {
	var (
		cfg      pipe.Config
		interval time.Duration
		duration time.Duration
	)
	fs := inv.flags()
	inFlightFlags(fs, &cfg, "FROM", "TO")
	fs.DurationVar(&interval, "interval", 0, "print the counters this often (0: only at exit)")
	fs.DurationVar(&duration, "duration", 0, "stop after this long (0: when interrupted)")
	args, err := inv.parseArgs(fs, "FROM", "TO")
	if err != nil {
		return err
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
	return runPipeURLs(ctx, inv, args[0], args[1], cfg, interval, duration)
}

// inFlightFlags registers --max-in-flight and --max-in-flight-bytes,
// the bounds of what a pipe from from to to holds in flight.
func inFlightFlags(fs *pflag.FlagSet, cfg *pipe.Config, from, to string) {
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", pipe.DefaultMaxInFlight, "most messages taken from "+from+" and not yet accepted by "+to)
	fs.IntVar(&cfg.MaxInFlightBytes, "max-in-flight-bytes", pipe.DefaultMaxInFlightBytes, "most bytes of messages (payload, key, headers) taken from "+from+" and not yet accepted by "+to)
}

// checkInFlight checks the values of inFlightFlags.
func checkInFlight(cfg pipe.Config) error {
	switch {
	case cfg.MaxInFlight < 1:
		return usagef("--max-in-flight %d: want at least 1", cfg.MaxInFlight)
	case cfg.MaxInFlightBytes < 1:
		return usagef("--max-in-flight-bytes %d: want at least 1", cfg.MaxInFlightBytes)
	}
	return nil
}

// runPipeURLs runs a pipe from the URL from to the URL to, printing its
// counters every interval (0: only at exit), for duration (0: until ctx
// ends).
func runPipeURLs(ctx context.Context, inv *invocation, from, to string, cfg pipe.Config, interval, duration time.Duration) error {
	fromURL, toURL := sourceDefaults(from), to
	fromEP, err := transport.Open(ctx, fromURL, transport.WithLogger(inv.log))
	if err != nil {
		return urlError(from, err)
	}
	toEP, err := openURL(ctx, toURL, inv.log)
	if err != nil {
		return err
	}
	if pipeLoop(from, to) {
		return &oneLineError{fmt.Errorf("FROM and TO are the same place (%s, %s): the pipe would read back what it writes, without end", from, to)}
	}

	dest, err := toEP.Publisher(ctx)
	if err != nil {
		return urlError(toURL, err)
	}
	closeTo := sync.OnceValue(dest.Close)
	defer closeTo()
	// TO's tail is read before FROM is joined, so that a multicast FROM's
	// window is not spent waiting.
	var tail []transport.Message
	tr, canResume := toEP.(transport.TailReader)
	if canResume {
		if tail, err = tr.Tail(ctx, pipe.DefaultTailRecords); err != nil {
			return fmt.Errorf("reading the last records of %s: %w", toURL, err)
		}
	}
	if br, ok := toEP.(transport.BackReader); ok && canResume {
		cfg.Back = br // for a source stream the tail does not reach
	}
	if canResume {
		cfg.Tail = tr // read again for a partition a rebalance gives a group member
	}
	src, err := fromEP.Subscriber(ctx)
	if err != nil {
		return urlError(from, err)
	}
	closeFrom := sync.OnceValue(src.Close)
	defer closeFrom()
	p, err := pipe.New(src, dest, cfg)
	if err != nil {
		return configError(err, map[string]string{"MaxInFlight": "max-in-flight", "MaxInFlightBytes": "max-in-flight-bytes"})
	}
	for _, side := range []struct {
		url string
		v   any
	}{{fromURL, src}, {toURL, dest}} {
		if b := bound(side.v); b != "" {
			fmt.Fprintf(inv.err, "%s is bound to %s\n", side.url, b)
		}
	}
	switch {
	case p.Acknowledges() && canResume:
		// What a killed pipe wrote and had not acknowledged, or whose
		// acknowledgement its group had not committed yet, is in TO:
		// it is dropped when FROM delivers it again.
		n, err := p.Resume(tail)
		switch {
		case errors.Is(err, pipe.ErrSplitStream):
			fmt.Fprintf(inv.err, "piping %s to %s: %s acknowledged once %s accepted; %v: what a killed pipe had not acknowledged is written again\n", fromURL, toURL, fromURL, toURL, err)
		case err != nil:
			return err
		default:
			fmt.Fprintf(inv.err, "piping %s to %s: %s acknowledged once %s accepted; dropping what %s already holds (%d streams)\n", fromURL, toURL, fromURL, toURL, toURL, n)
		}
	case p.Acknowledges():
		fmt.Fprintf(inv.err, "piping %s to %s: %s acknowledged once %s accepted\n", fromURL, toURL, fromURL, toURL)
	case canResume:
		n, err := p.Resume(tail)
		if err != nil {
			return err
		}
		fmt.Fprintf(inv.err, "piping %s to %s: %s cannot be acknowledged; resuming after what %s holds (%d streams)\n", fromURL, toURL, fromURL, toURL, n)
	default:
		fmt.Fprintf(inv.err, "piping %s to %s: warning: %s cannot be acknowledged nor %s read back, so what %s sends while this pipe is down is lost without a gap marker\n",
			fromURL, toURL, fromURL, toURL, fromURL)
	}

	if s := p.Stats(); s.Interleaved > 0 {
		fmt.Fprintf(inv.err, "warning: %d streams of %s are in %s out of order (written by two pipes, or a source of the same topic name on another cluster): not resumed, what %s gives again of them is written again\n",
			s.Interleaved, fromURL, toURL, fromURL)
	}
	if s := p.Stats(); s.MalformedTail > 0 {
		fmt.Fprintf(inv.err, "warning: %d of the last records of %s have a %s header that does not decode, ignored as if no pipe wrote them; the first: %v\n",
			s.MalformedTail, toURL, transport.HeaderOrigin, p.TailError())
	}

	runCtx, cancel := withDuration(ctx, duration)
	defer cancel()
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchStall(inv.err, p, fromURL, toURL, stop)
	}()
	if interval > 0 {
		go printPipeStats(inv.err, p, interval, stop)
	}
	err = p.Run(runCtx)
	close(stop)
	<-watched
	err = errors.Join(err, closeTo(), closeFrom())
	writePipeStats(inv.err, p.Stats())
	return err
}

// sourceDefaults sets on a pipe's FROM URL the parameters its scheme asks
// a pipe to set (transport.Scheme.SourceDefaults) where the URL does not.
func sourceDefaults(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	s, ok := transport.Describe(u.Scheme)
	if !ok || len(s.SourceDefaults) == 0 {
		return raw
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return raw
	}
	changed := false
	for k, v := range s.SourceDefaults {
		if !q.Has(k) {
			q.Set(k, v)
			changed = true
		}
	}
	if !changed {
		return raw
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// stallAfter is how long a pipe with writes in flight goes without a
// receipt from TO before it says so on standard error.
const stallAfter = 10 * time.Second

// stallWatch tells when TO has accepted nothing for stallAfter while
// writes wait (TO down, or retrying a write it will never take), and
// when it accepts again.
type stallWatch struct {
	accepted uint64
	since    time.Time // when accepted last changed, or writes came in flight
	stalled  bool
}

// check takes the counters at now and says whether a stall begins
// (warn) or ends (over).
func (w *stallWatch) check(now time.Time, s pipe.Stats) (warn, over bool) {
	if s.Accepted != w.accepted || s.InFlight == 0 || w.since.IsZero() {
		w.accepted, w.since = s.Accepted, now
		over, w.stalled = w.stalled, false
		return false, over
	}
	if !w.stalled && now.Sub(w.since) >= stallAfter {
		w.stalled = true
		return true, false
	}
	return false, false
}

// watchStall checks p, from the URL from to the URL to, every second
// until stop is closed, and says on w when to stops accepting and when
// it accepts again.
func watchStall(w io.Writer, p *pipe.Pipe, from, to string, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var sw stallWatch
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s := p.Stats()
			switch warn, over := sw.check(now, s); {
			case warn:
				stream, pos, _ := p.Oldest()
				fmt.Fprintf(w, "warning: %s has accepted nothing for %v; %d writes wait, the oldest of %s stream %s position %d (%s down, or refusing it: see the transport's messages above)\n",
					to, now.Sub(sw.since).Round(time.Second), s.InFlight, from, stream, pos, to)
			case over:
				fmt.Fprintf(w, "%s accepts again\n", to)
			}
		}
	}
}

func printPipeStats(w io.Writer, p *pipe.Pipe, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			fmt.Fprint(w, pipeStatsLine(now, p.Stats()))
		}
	}
}

// pipeStatsLine is the line printPipeStats prints of s at now.
func pipeStatsLine(now time.Time, s pipe.Stats) string {
	return fmt.Sprintf("%s forwarded=%d markers=%d skipped=%d accepted=%d in-flight=%d acks=%d rereads-failed=%d held-runs-dropped=%d ended-forgotten=%d\n",
		now.Format("15:04:05"), s.Forwarded, s.Markers, s.Skipped, s.Accepted, s.InFlight, s.Acks, s.RereadsFailed, s.HeldRunsDropped, s.EndedForgotten)
}

func writePipeStats(w io.Writer, s pipe.Stats) {
	ends := ""
	if s.EndMarkers > 0 { // so that the accepted count adds up
		ends = fmt.Sprintf(", %d end markers (sessions their publishers closed)", s.EndMarkers)
	}
	fmt.Fprintf(w, "forwarded %d messages, %d gap markers (%d for what the source no longer held)%s, skipped %d already written; %d accepted, %d in flight; acknowledged the source %d times\n",
		s.Forwarded, s.Markers, s.ResumeGaps, ends, s.Skipped, s.Accepted, s.InFlight, s.Acks)
	if s.LookedBack > 0 {
		fmt.Fprintf(w, "read %d records of the destination further back than its last %d, for source streams they did not hold; found %d there\n",
			s.LookedBack, pipe.DefaultTailRecords, s.FoundBack)
	}
	if s.Unresumed > 0 {
		fmt.Fprintf(w, "warning: %d source streams were not in the last records of a destination stream read at start (%d, and up to %d further back): if this pipe wrote them before, what a feed sent while it was down has no gap marker, and what it wrote of a log is written again\n",
			s.Unresumed, pipe.DefaultTailRecords, pipe.DefaultMaxLookback)
	}
	if s.RereadsFailed > 0 {
		fmt.Fprintf(w, "warning: %d reads of TO's last records at a partition's start failed or took longer than %v: what the partition's previous owner wrote and its group had not committed may have been written again\n",
			s.RereadsFailed, pipe.DefaultRereadTimeout)
	}
	if s.HeldRunsDropped > 0 {
		fmt.Fprintf(w, "%d runs of positions TO held forgotten, past the bound kept per FROM stream: a log's positions in them are written again if FROM gives them again; a feed's holes between them are taken as held\n",
			s.HeldRunsDropped)
	}
	if s.EndedForgotten > 0 {
		fmt.Fprintf(w, "%d ended feed sessions forgotten, past the last ones kept: one that comes back is counted among the source streams not resumed\n",
			s.EndedForgotten)
	}
}
