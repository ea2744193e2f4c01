package main

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/kafka"
)

// archiveFeed is a feed of ticks published from this process on lo
// (TTL 0), paced, and the logd and recorder (`brokerless mcast record`
// in a child process) that archive it.
type archiveFeed struct {
	group, archive, addr string
	pub                  *multicast.Publisher
	rate                 float64
	start                time.Time
	published            chan uint64
	cancel               context.CancelFunc
}

// startArchiveFeed starts logd and a recorder of a feed to come.
func startArchiveFeed(t *testing.T, topic string) (*archiveFeed, *child) {
	t.Helper()
	f := &archiveFeed{group: testGroup(), published: make(chan uint64, 1)}
	f.addr = startTestLogd(t)
	f.archive = fmt.Sprintf("logd://%s/%s", f.addr, topic)
	return f, f.startRecorder(t)
}

// run starts a publisher (its session begins now: subscribers started
// before get it from its first message) that sends n ticks at rate, with
// the given retransmit window (zero: the engine's default).
func (f *archiveFeed) run(t *testing.T, rate float64, n uint64, sender reliable.SenderConfig) {
	t.Helper()
	var err error
	f.pub, err = multicast.NewPublisher(context.Background(), multicast.Config{
		Group: netip.MustParseAddrPort(f.group), Interface: "lo", HostOnly: true, Feed: 1, Sender: sender,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.pub.Close() })
	var ctx context.Context
	ctx, f.cancel = context.WithCancel(context.Background())
	t.Cleanup(f.cancel)
	f.rate, f.start = rate, time.Now()
	go func() {
		sent, _ := publishTicks(ctx, f.pub, newTickGen(1), pacer{start: f.start, rate: rate, limit: n})
		f.published <- sent
	}()
}

// startRecorder starts `brokerless mcast record` of the feed.
func (f *archiveFeed) startRecorder(t *testing.T) *child {
	return startChild(t, "piping ", "mcast", "record", "--group", f.group, "--to", f.archive)
}

// at waits until the feed has run for d: the feed's timing, not an
// event to wait on.
func (f *archiveFeed) at(d time.Duration) { time.Sleep(time.Until(f.start.Add(d))) }

// finish waits for the last tick, checks that all n were sent, and
// closes the publisher (its subscribers see the stream end).
func (f *archiveFeed) finish(t *testing.T, n uint64) {
	t.Helper()
	if sent := <-f.published; sent != n {
		t.Fatalf("published %d ticks, want %d", sent, n)
	}
	if err := f.pub.Close(); err != nil {
		t.Fatal(err)
	}
}

// subArgs is `brokerless mcast sub` of the feed, with more flags.
func (f *archiveFeed) subArgs(more ...string) []string {
	return append([]string{"mcast", "sub", "--group", f.group}, more...)
}

// oneSession returns the only session of a subscriber's output.
func oneSession(t *testing.T, l *subLog) *sessionLog {
	t.Helper()
	if len(l.sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(l.sessions))
	}
	return l.sessions[0]
}

// testRate is the feed rate of these tests: the 50,000 msgs/s,
// 10,000 under the race detector, which slows the recorder and the
// subscribers several times.
func testRate() float64 {
	if raceEnabled {
		return 10000
	}
	return 50000
}

// TestArchiveLateJoin: a feed at 50,000 msgs/s for 10 s, recorded; a
// subscriber (`mcast sub --archive … --join earliest`, in a child
// process) joins at 5 s. It delivers every message from 1 to the last,
// in order, with no gap and no duplicate: the first ones from the
// archive, then, after one switch, the live feed to the end.
func TestArchiveLateJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s feed")
	}
	rate := testRate()
	n := limitFor(rate, 10*time.Second)
	f, rec := startArchiveFeed(t, "late")
	f.run(t, rate, n, reliable.SenderConfig{})
	f.at(5 * time.Second)
	before := f.pub.Stats().Messages
	sub := startOutChild(t, "listening on", f.subArgs("--archive", f.archive, "--join", "earliest", "--until-end")...)
	f.finish(t, n)
	sub.wait(t, 60*time.Second)
	rec.stop(t)

	l := readSubLog(t, sub.path)
	s := oneSession(t, l)
	if s.first != 1 {
		t.Fatalf("the stream starts at %d, want 1", s.first)
	}
	if gaps := s.account(t, n); len(gaps) != 0 {
		t.Fatalf("gaps %+v", gaps)
	}
	if !strings.Contains(s.end, "closed by publisher") {
		t.Fatalf("end %q, want closed by publisher", s.end)
	}
	fromArchive, _, replays, merges := archiveCounts(t, l.summary)
	if replays != 1 || merges != 1 || fromArchive < before || fromArchive >= n {
		t.Fatalf("%s\nwant %d or more messages (those published before it joined), and not all %d, from one replay of the archive, then live to the end", l.summary, before, n)
	}
	t.Logf("%d messages at %.0f/s; joined after %d; %s", n, rate, before, l.summary)
}

// archiveStop is how long TestArchiveBeyondWindow stops its
// subscribers: BROKERLESS_ARCHIVE_STOP (e.g. 15s, as the issue asks),
// else 8 s.
func archiveStop() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BROKERLESS_ARCHIVE_STOP")); err == nil && d > 0 {
		return d
	}
	return 8 * time.Second
}

// TestArchiveBeyondWindow: the publisher keeps 1,000 datagrams (about a
// third of a second at 50,000 msgs/s) and two subscribers, child
// processes, are SIGSTOPped for 8 s (BROKERLESS_ARCHIVE_STOP=15s for the
// issue's 15 s). Like 15 s, 8 s is beyond the window, the kernel's
// receive buffer (4 MiB, about a second), the engine's idle timeout (5 s)
// and, at 50,000 msgs/s, its largest believable jump past what the
// buffer held (262,144 sequence numbers): the same paths, in half the
// time. With an archive the subscriber delivers every message, with no
// gap; without one it reports the loss as explicit gaps, and every
// message is delivered or inside one; both streams outlive the stop.
func TestArchiveBeyondWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("stops two subscribers for 8 s")
	}
	rate, stop := testRate(), archiveStop()
	n := limitFor(rate, time.Second+stop+3*time.Second)
	f, rec := startArchiveFeed(t, "beyond")
	with := startOutChild(t, "listening on", f.subArgs("--archive", f.archive, "--until-end")...)
	without := startOutChild(t, "listening on", f.subArgs("--until-end")...)
	f.run(t, rate, n, reliableWindow(1000))
	f.at(time.Second)
	with.signal(t, syscall.SIGSTOP)
	without.signal(t, syscall.SIGSTOP)
	time.Sleep(stop) // the stop: the test's own timing
	with.signal(t, syscall.SIGCONT)
	without.signal(t, syscall.SIGCONT)
	f.finish(t, n)
	with.wait(t, 90*time.Second)
	without.wait(t, 90*time.Second)
	rec.stop(t)

	l := readSubLog(t, with.path)
	s := oneSession(t, l)
	if gaps := s.account(t, n); len(gaps) != 0 || s.first != 1 {
		t.Fatalf("with an archive: from %d, gaps %+v; want from 1, none: %s", s.first, gaps, l.summary)
	}
	fromArchive, _, _, _ := archiveCounts(t, l.summary)
	if fromArchive == 0 {
		t.Fatalf("with an archive: nothing from it: the stop was not beyond the window? %s", l.summary)
	}
	if !strings.Contains(s.end, "closed by publisher") {
		// The stream must outlive the stop: ended as silent, its
		// subscriber would have taken the rest from the archive alone.
		t.Fatalf("with an archive: end %q, want closed by publisher: %s", s.end, l.summary)
	}
	t.Logf("with an archive: %s", l.summary)

	l = readSubLog(t, without.path)
	s = oneSession(t, l)
	gaps := s.account(t, n)
	if len(gaps) == 0 || s.first != 1 {
		t.Fatalf("without an archive: from %d, no gap: the stop was not beyond the window", s.first)
	}
	lost := uint64(0)
	for _, g := range gaps {
		switch g.reason {
		case transport.GapOutpaced.String(), transport.GapUnrecoverable.String(), transport.GapOverflow.String():
		default:
			t.Errorf("without an archive: gap %+v, want outpaced or unrecoverable (or the subscriber's buffers full)", g)
		}
		lost += g.to - g.from + 1
	}
	if !strings.Contains(s.end, "closed by publisher") {
		t.Fatalf("without an archive: end %q, want closed by publisher: the stream must outlive the stop", s.end)
	}
	t.Logf("without an archive: %d gaps, %d lost; %s", len(gaps), lost, l.summary)
}

// archiveSessions reads a topic a recorder wrote: the last position of
// each session it holds, and its gap markers.
func archiveSessions(t *testing.T, addr, topic string) (last map[string]uint64, markers []transport.Gap) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ms, err := kafka.Tail(ctx, kafka.Config{Brokers: []string{addr}, Topic: topic}, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	last = map[string]uint64{}
	for i := range ms {
		if g, ok, err := transport.ParseGapMarker(ms[i]); err != nil {
			t.Fatal(err)
		} else if ok {
			markers = append(markers, g)
			last[g.Stream.String()] = max(last[g.Stream.String()], g.To)
			continue
		}
		o, ok, err := transport.ParseOrigin(ms[i].Headers)
		if !ok || err != nil {
			t.Fatalf("offset %d has no origin: %v", ms[i].Seq, err)
		}
		last[o.Stream.String()] = max(last[o.Stream.String()], o.Seq)
	}
	return last, markers
}

// TestArchivePublisherCrash: a publisher (a child process) is SIGKILLed
// while a subscriber with 20% loss is behind (stopped for 300 ms just
// before, so that its backlog has losses only the dead publisher could
// have repaired); a restarted publisher begins a new session. The
// subscriber completes the dead session from the archive — up to the
// archive's last message of it, past what it had seen — with no gap,
// ends it, then follows the new session to its end.
func TestArchivePublisherCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a publisher")
	}
	rate := testRate() / 2
	f, rec := startArchiveFeed(t, "crash")
	sub := startOutChild(t, "listening on", f.subArgs("--archive", f.archive, "--simulate-loss", "0.2", "--seed", "7")...)
	pubArgs := []string{"mcast", "pub", "--group", f.group, "--ttl", "0", "--ticks", "--rate", fmt.Sprint(rate)}
	dead := startChild(t, "publishing to", pubArgs...)
	time.Sleep(time.Second) // the feed's timing
	sub.signal(t, syscall.SIGSTOP)
	time.Sleep(300 * time.Millisecond)
	dead.kill(t)
	sub.signal(t, syscall.SIGCONT)
	count := uint64(rate)
	ended := sub.expect("closed by publisher")
	next := startChild(t, "publishing to", append(pubArgs, "--count", fmt.Sprint(count))...)
	if err := <-next.done; err != nil {
		t.Fatalf("second publisher: %v\n%s", err, next.stderr)
	}
	sub.await(t, ended, "closed by publisher", 60*time.Second)
	sub.signal(t, syscall.SIGTERM)
	sub.wait(t, 30*time.Second)
	rec.stop(t)

	last, markers := archiveSessions(t, f.addr, "crash")
	l := readSubLog(t, sub.path)
	if len(l.sessions) != 2 || len(markers) != 0 {
		t.Fatalf("%d sessions, archive markers %v: want 2 sessions, no marker", len(l.sessions), markers)
	}
	a, b := l.sessions[0], l.sessions[1]
	if gaps := a.account(t, last[a.id]); len(gaps) != 0 || a.first != 1 {
		t.Fatalf("dead session: from %d, gaps %+v: want from 1 to the archive's last, %d, with none", a.first, gaps, last[a.id])
	}
	if !strings.Contains(a.end, "replaced by a new session") {
		t.Fatalf("dead session's end %q, want replaced", a.end)
	}
	if gaps := b.account(t, count); len(gaps) != 0 || b.first != 1 || !strings.Contains(b.end, "closed by publisher") {
		t.Fatalf("new session: from %d, gaps %+v, end %q: want 1..%d, none, closed", b.first, gaps, b.end, count)
	}
	fromArchive, _, _, _ := archiveCounts(t, l.summary)
	if fromArchive == 0 {
		t.Fatalf("nothing from the archive: the subscriber was not behind: %s", l.summary)
	}
	t.Logf("dead session 1..%d, new session 1..%d; %s", last[a.id], count, l.summary)
}

// TestArchiveRecorderDown: the recorder is killed and stays down for
// three of the publisher's windows. The archive holds one gap marker,
// for exactly what the publisher no longer held when the recorder came
// back (GapSourceDown), besides any exact marker of what the restarted
// recorder lost falling behind a publisher without flow control
// (GapOutpaced), and a late joiner reports exactly those ranges as gaps,
// with those reasons, and nothing else.
func TestArchiveRecorderDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 s feed")
	}
	rate := testRate()
	const window = 1024
	n := limitFor(rate, 4*time.Second)
	f, rec := startArchiveFeed(t, "down")
	f.run(t, rate, n, reliableWindow(window))
	f.at(time.Second)
	rec.kill(t)
	t.Logf("killed at %v, %d published; recorder: %s", time.Since(f.start), f.pub.Stats().Messages, rec.stderr)
	time.Sleep(3 * windowTime(f.pub, window, rate)) // down longer than the window
	rec = f.startRecorder(t)
	t.Logf("restarted at %v, %d published", time.Since(f.start), f.pub.Stats().Messages)
	f.at(2500 * time.Millisecond)
	// The joiner is `brokerless sub URL`, the archive a parameter.
	raw := fmt.Sprintf("mcast://%s?ttl=0&archive=%s&join=earliest", f.group, url.QueryEscape(f.archive))
	sub := startOutChild(t, "listening on", "sub", raw, "--until-end")
	f.finish(t, n)
	t.Logf("finished at %v", time.Since(f.start))
	sub.wait(t, 60*time.Second)
	t.Logf("joiner done at %v", time.Since(f.start))
	rec.stop(t)
	t.Logf("recorder stopped at %v", time.Since(f.start))

	_, markers := archiveSessions(t, f.addr, "down")
	var down []transport.Gap
	for _, m := range markers {
		switch m.Reason {
		case transport.GapSourceDown:
			down = append(down, m)
		case transport.GapOutpaced:
			// The restarted recorder catches up from the publisher's
			// window while the publisher, without flow control, goes on
			// at full speed: on a loaded machine it can fall behind, and
			// then marks exactly what it lost. Allowed, if exact.
		default:
			t.Fatalf("archive markers %v: %v is neither the recorder down nor outpaced", markers, m)
		}
	}
	if len(down) != 1 {
		t.Fatalf("archive markers %v, want one, the recorder down", markers)
	}
	m := down[0]
	l := readSubLog(t, sub.path)
	s := oneSession(t, l)
	gaps := s.account(t, n)
	if s.first != 1 || len(gaps) != len(markers) {
		t.Fatalf("from %d, gaps %+v: want from 1 and the archive's gaps %v", s.first, gaps, markers)
	}
	for i, g := range gaps {
		if g.from != markers[i].From || g.to != markers[i].To || g.reason != markers[i].Reason.String() {
			t.Fatalf("gaps %+v: want exactly the archive's %v", gaps, markers)
		}
	}
	t.Logf("recorder down for %d messages (%v), %d outpaced markers; %s", m.Len(), m, len(markers)-1, l.summary)
}
