package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/brokerless/brokerless/logd"
	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
	"github.com/brokerless/brokerless/transport/kafka"
	"github.com/brokerless/brokerless/transport/pipe"
)

var demoArchiveCmd = command{
	name:     "demo archive",
	summary:  "a multicast feed made durable by logd: late join, a stalled subscriber, a publisher crash",
	synopsis: "[--rate 20000]",
	about: `
Runs, on this machine (loopback, TTL 0), a multicast feed, a recorder
writing it into a logd that runs inside this process over a temporary
directory (removed at exit), and three subscribers that name that topic as
their archive:

  lossy    drops 20% of the datagrams it receives, and stops reading
           from 0.3 s before the crash to 0.3 s after;
  stalled  stops reading for 1.5 s in the second session, far more than
           its buffers and the publisher's window hold;
  late     joins 1.5 s after the feed began, with --join earliest.

The publisher, a child process ('brokerless mcast pub --ticks'), is killed
with SIGKILL 3 s in, with no goodbye; a new publisher then starts a new
session of the feed and publishes for 2 s, keeping 500 datagrams
(about 0.4 s at 20,000 ticks/s) for repairs, and closes.

Each subscriber must deliver every message of both sessions, once and in
order: what the publisher could no longer repair (the stalled
subscriber's backlog, the late joiner's history, the dead session's tail
the lossy one had not recovered) from the archive. A table shows, per
subscriber and session, what it delivered and the gaps it reported, and
how many messages came from the archive. The exit status is 0 when
nothing was lost, 1 otherwise, with the reason.`,
	examples: `
# The three cases, at 20,000 ticks per second.
brokerless demo archive

# Gentler, for a slow machine.
brokerless demo archive --rate 5000`,
	run: runDemoArchiveCmd,
}

// spawnSelf makes the command that runs this program with args: the
// demo's publisher, a process it can kill. Tests replace it.
var spawnSelf = func(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, args...), nil
}

func runDemoArchiveCmd(ctx context.Context, inv *invocation) error {
	var rate float64
	fs := inv.flags()
	fs.Float64Var(&rate, "rate", 20000, "ticks per second")
	if err := inv.parse(fs); err != nil {
		return err
	}
	if !(rate > 0 && rate <= 1e6) {
		return usagef("--rate %v: want a number of ticks per second from 1 to 1000000", rate)
	}
	res, err := runArchiveDemo(ctx, rate, inv.out)
	if err != nil {
		return err
	}
	if p := res.problems(); len(p) > 0 {
		return fmt.Errorf("%w: %s", errDemoFailed, strings.Join(p, "; "))
	}
	return nil
}

// archiveDemoResult is what the demo observed: the messages of each
// session the archive holds, and each subscriber's tally per session.
type archiveDemoResult struct {
	sessions [2]transport.StreamID
	// sent is the last sequence number each publisher sent: the second
	// one's count; the first one's (killed, it cannot say) as a witness
	// without the archive saw it on the wire. What the subscribers must
	// deliver, not taken from the archive under test.
	sent     [2]uint64
	archived [2]uint64 // the last sequence number of each session in the archive
	markers  int       // gap markers in the archive
	subs     []*archiveDemoSub
}

// demoWitness is a subscriber without the archive: it notes the last
// position of each session its engine heard of (messages, the Gaps of
// what it lost, the StreamEnd at the last position the publisher
// announced), until it sees the second session close.
type demoWitness struct {
	sub    *multicast.Subscriber
	mu     sync.Mutex
	last   map[transport.StreamID]uint64
	closed chan struct{} // closed when the second session closed
	done   chan struct{}
}

func (w *demoWitness) receive(ctx context.Context, second func() transport.StreamID) {
	defer close(w.done)
	for {
		ev, err := w.sub.Receive(ctx)
		if err != nil {
			return
		}
		var last uint64
		switch ev.Kind {
		case transport.EventMessage:
			last = ev.Message.Seq
		case transport.EventGap:
			last = ev.Gap.To
		case transport.EventStreamEnd:
			last = ev.End.LastSeq
		}
		id := eventStream(&ev)
		w.mu.Lock()
		w.last[id] = max(w.last[id], last)
		w.mu.Unlock()
		if ev.Kind == transport.EventStreamEnd && id == second() && ev.End.Reason == transport.EndClosed {
			close(w.closed)
			return
		}
	}
}

func (w *demoWitness) lastOf(id transport.StreamID) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[id]
}

// archiveDemoSub is one subscriber of the demo and what it delivered.
type archiveDemoSub struct {
	name, about  string
	sub          *multicast.Subscriber
	stall        time.Duration // stop reading this long at message stallAt of session stallSession (0: the first)
	stallAt      uint64
	stallSession int

	mu       sync.Mutex
	order    []transport.StreamID // the streams in the order they started
	tallies  map[transport.StreamID]*tally
	closed   bool // the second session ended, closed by its publisher
	changed  chan struct{}
	done     chan struct{}
	err      error
	archived multicast.ArchiveStats
}

func (d *archiveDemoSub) receive(ctx context.Context, second func() transport.StreamID) {
	defer close(d.done)
	for {
		ev, err := d.sub.Receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				d.err = err
			}
			return
		}
		d.mu.Lock()
		id := eventStream(&ev)
		t := d.tallies[id]
		if t == nil {
			nt := newTally()
			t = &nt
			d.tallies[id] = t
			d.order = append(d.order, id)
		}
		t.add(&ev, time.Now())
		if ev.Kind == transport.EventStreamEnd && id == second() && ev.End.Reason == transport.EndClosed {
			d.closed = true
		}
		d.mu.Unlock()
		select {
		case d.changed <- struct{}{}:
		default:
		}
		if ev.Kind == transport.EventMessage && d.stall > 0 && len(d.order) == d.stallSession+1 && id == d.order[d.stallSession] {
			if ev.Message.Seq == d.stallAt {
				select { // the stall: the demo's timing, not an event to wait on
				case <-time.After(d.stall):
				case <-ctx.Done():
				}
			}
		}
	}
}

// runArchiveDemo runs the demo and writes its report to out. The error
// is for a demo that could not run; whether anything was lost is in the
// result.
func runArchiveDemo(ctx context.Context, rate float64, out io.Writer) (*archiveDemoResult, error) {
	res := &archiveDemoResult{}
	dir, err := os.MkdirTemp("", "brokerless-demo-archive-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := logd.New(logd.Config{Storage: storage.Config{Dir: dir}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	const topic = "demo"
	archive := "logd://" + addr + "/" + topic

	group := randomGroup()
	base := multicast.Config{Group: group, Interface: "lo", HostOnly: true, Feed: 1}
	fmt.Fprintf(out, "feed 1 on %v (lo, TTL 0) at %.0f ticks/s; logd on %s over %s; recorder into %s\n", group, rate, addr, dir, archive)

	stopRecorder, err := startDemoRecorder(ctx, base, addr, topic)
	if err != nil {
		return nil, err
	}
	defer stopRecorder()

	var (
		streamMu sync.Mutex
		second   transport.StreamID
	)
	secondID := func() transport.StreamID {
		streamMu.Lock()
		defer streamMu.Unlock()
		return second
	}
	recvCtx, stopReceiving := context.WithCancel(ctx)
	defer stopReceiving()
	join := func(name, about string, cfg multicast.Config, stall time.Duration, stallSession int, stallAt uint64) error {
		cfg.Archive = multicast.ArchiveConfig{URL: archive, Join: cfg.Archive.Join}
		sub, err := multicast.NewSubscriber(ctx, cfg)
		if err != nil {
			return fmt.Errorf("subscriber %s: %w", name, err)
		}
		d := &archiveDemoSub{name: name, about: about, sub: sub, stall: stall, stallSession: stallSession, stallAt: stallAt,
			tallies: map[transport.StreamID]*tally{}, changed: make(chan struct{}, 1), done: make(chan struct{})}
		res.subs = append(res.subs, d)
		go d.receive(recvCtx, secondID)
		return nil
	}
	defer func() {
		stopReceiving()
		for _, d := range res.subs {
			<-d.done
			d.sub.Close()
		}
	}()
	wsub, err := multicast.NewSubscriber(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("the witness subscriber: %w", err)
	}
	witness := &demoWitness{sub: wsub, last: map[transport.StreamID]uint64{}, closed: make(chan struct{}), done: make(chan struct{})}
	go witness.receive(recvCtx, secondID)
	defer func() {
		stopReceiving()
		<-witness.done
		wsub.Close()
	}()
	lossy := base
	lossy.Filter = func() (multicast.DatagramFilter, error) {
		return faultnet.NewFilter(faultnet.Faults{Loss: 0.2, Seed: 7})
	}
	lossy.RecvBuffer = 64 << 10
	if err := join("lossy", "20% loss, stalls at the crash", lossy, 600*time.Millisecond, 0, uint64(2.7*rate)); err != nil {
		return nil, err
	}
	stalled := base
	stalled.RecvBuffer = 64 << 10 // what the kernel holds while it stalls: little
	if err := join("stalled", "stops reading 1.5 s, window 0.4 s", stalled, 1500*time.Millisecond, 1, uint64(rate/5)); err != nil {
		return nil, err
	}

	// The first publisher, a process of its own, killed 3 s in.
	cmd, err := spawnSelf("mcast", "pub", "--group", group.String(), "--iface", "lo", "--ttl", "0", "--ticks", "--rate", fmt.Sprint(rate))
	if err != nil {
		return nil, err
	}
	var pubErr strings.Builder
	cmd.Stderr = &pubErr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the publisher: %w", err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	sleepCtx(ctx, time.Until(start.Add(1500*time.Millisecond))) // the demo's timing
	late := base
	late.Archive.Join = multicast.JoinEarliest()
	if err := join("late", "joins 1.5 s in, --join earliest", late, 0, 0, 0); err != nil {
		return nil, err
	}
	sleepCtx(ctx, time.Until(start.Add(3*time.Second)))
	if err := ctx.Err(); err != nil {
		return nil, errInterrupted
	}
	if err := cmd.Process.Kill(); err != nil {
		return nil, fmt.Errorf("killing the publisher: %w", err)
	}
	cmd.Wait()
	killed = true
	if !strings.Contains(pubErr.String(), "publishing to") {
		return nil, fmt.Errorf("the publisher did not start: %s", pubErr.String())
	}
	fmt.Fprintf(out, "publisher killed with SIGKILL after %.1f s; a new one starts a new session\n", time.Since(start).Seconds())

	// The second publisher, here, publishes for 2 s and closes. It
	// keeps 500 datagrams, about 0.4 s at 20,000 ticks/s.
	pcfg := base
	pcfg.Sender = reliable.SenderConfig{WindowDatagrams: 500, MaxQueued: 250, MaxMessageSize: 64 << 10}
	pub, err := multicast.NewPublisher(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	streamMu.Lock()
	second = pub.Stream()
	streamMu.Unlock()
	res.sessions[1] = second
	n2 := uint64(2 * rate)
	sent, perr := publishTicks(ctx, pub, newTickGen(2), pacer{start: time.Now(), rate: rate, limit: n2})
	if cerr := pub.Close(); perr == nil {
		perr = cerr
	}
	if perr != nil || sent != n2 {
		return nil, fmt.Errorf("the second publisher sent %d of %d: %v", sent, n2, perr)
	}
	res.sent[1] = n2

	// Wait until each subscriber saw the second session close.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, d := range res.subs {
		for {
			d.mu.Lock()
			closed := d.closed
			d.mu.Unlock()
			if closed {
				break
			}
			select {
			case <-d.changed:
				continue
			case <-d.done:
			case <-waitCtx.Done():
			}
			break
		}
	}
	select {
	case <-witness.closed:
	case <-witness.done:
	case <-waitCtx.Done():
	}
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	stopReceiving()
	for _, d := range res.subs {
		<-d.done
		d.archived = d.sub.Stats().Archive
	}
	if err := res.readArchive(ctx, addr, topic); err != nil {
		return nil, err
	}
	res.sent[0] = witness.lastOf(res.sessions[0])
	res.write(out)
	return res, nil
}

// startDemoRecorder records the feed into topic, as `brokerless mcast
// record` does, until the returned function is called.
func startDemoRecorder(ctx context.Context, base multicast.Config, addr, topic string) (func(), error) {
	rcfg := base
	rcfg.Receiver.Join = reliable.JoinEarliest
	from, err := multicast.NewSubscriber(ctx, rcfg)
	if err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	to, err := kafka.NewPublisher(ctx, kafka.Config{Brokers: []string{addr}, Topic: topic, Partitions: []int32{0}})
	if err != nil {
		from.Close()
		return nil, fmt.Errorf("recorder: %w", err)
	}
	p, err := pipe.New(from, to, pipe.Config{})
	if err != nil {
		from.Close()
		to.Close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(runCtx)
	}()
	return func() {
		stop()
		<-done
		to.Close()
		from.Close()
	}, nil
}

// readArchive finds, in what the recorder wrote, the first session and
// the last sequence number of each, and counts the gap markers.
func (r *archiveDemoResult) readArchive(ctx context.Context, addr, topic string) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ms, err := kafka.Tail(rctx, kafka.Config{Brokers: []string{addr}, Topic: topic}, 1<<40)
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	for i := range ms {
		if _, ok, _ := transport.ParseGapMarker(ms[i]); ok {
			r.markers++
			continue
		}
		o, ok, err := transport.ParseOrigin(ms[i].Headers)
		if !ok || err != nil {
			continue
		}
		if r.sessions[0].IsZero() && o.Stream != r.sessions[1] {
			r.sessions[0] = o.Stream
		}
		for k, id := range r.sessions {
			if o.Stream == id {
				r.archived[k] = max(r.archived[k], o.Seq)
			}
		}
	}
	if r.sessions[0].IsZero() {
		return errors.New("the archive holds nothing of the first session")
	}
	return nil
}

// problems lists what some subscriber lost or got wrong.
func (r *archiveDemoResult) problems() []string {
	var ps []string
	for _, d := range r.subs {
		if d.err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", d.name, d.err))
		}
		for i, id := range r.sessions {
			t := d.tallies[id]
			switch {
			case t == nil:
				ps = append(ps, fmt.Sprintf("%s: nothing of session %d", d.name, i+1))
			case t.delivered != r.sent[i] || t.gaps != 0 || t.disorder != 0 || t.next != r.sent[i]+1:
				p := fmt.Sprintf("%s: session %d: %d of %d delivered, %d gaps, %d out of order",
					d.name, i+1, t.delivered, r.sent[i], t.gaps, t.disorder)
				if len(t.firstGaps) > 0 {
					p += " (" + strings.Join(t.firstGaps, ", ") + ")"
				}
				ps = append(ps, p)
			}
		}
		if len(d.order) != 2 || d.order[0] != r.sessions[0] {
			ps = append(ps, fmt.Sprintf("%s: %d streams, want the two sessions in order", d.name, len(d.order)))
		}
	}
	for i := range r.sessions {
		if r.archived[i] != r.sent[i] {
			ps = append(ps, fmt.Sprintf("the archive holds session %d up to %d, its publisher sent %d", i+1, r.archived[i], r.sent[i]))
		}
	}
	if r.sent[0] == 0 {
		ps = append(ps, "the witness saw nothing of session 1")
	}
	if r.markers != 0 {
		ps = append(ps, fmt.Sprintf("the archive holds %d gap markers", r.markers))
	}
	return ps
}

// write prints the report.
func (r *archiveDemoResult) write(out io.Writer) {
	fmt.Fprintf(out, "\nsession 1 (killed) 1..%d, session 2 (closed) 1..%d; the archive holds 1..%d and 1..%d, %d gap markers\n\n",
		r.sent[0], r.sent[1], r.archived[0], r.archived[1], r.markers)
	fmt.Fprintf(out, "%-8s %-33s %19s %19s %13s\n", "", "", "session 1", "session 2", "")
	fmt.Fprintf(out, "%-8s %-33s %9s %9s %9s %9s %13s\n", "sub", "", "delivered", "gaps", "delivered", "gaps", "from archive")
	for _, d := range r.subs {
		fmt.Fprintf(out, "%-8s %-33s", d.name, d.about)
		for _, id := range r.sessions {
			if t := d.tallies[id]; t != nil {
				fmt.Fprintf(out, " %9d %9d", t.delivered, t.gaps)
			} else {
				fmt.Fprintf(out, " %9s %9s", "-", "-")
			}
		}
		fmt.Fprintf(out, " %13d\n", d.archived.FromArchive)
	}
	fmt.Fprintln(out)
	if ps := r.problems(); len(ps) > 0 {
		fmt.Fprintf(out, "LOST: %s\n", strings.Join(ps, "; "))
		return
	}
	fmt.Fprintln(out, "nothing lost: each subscriber delivered every message of both sessions once, in order, with no gap")
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// eventStream is the stream an event is of.
func eventStream(ev *transport.Event) transport.StreamID {
	switch ev.Kind {
	case transport.EventMessage:
		return ev.Message.Stream
	case transport.EventGap:
		return ev.Gap.Stream
	case transport.EventStreamStart:
		return ev.Start.Stream
	}
	return ev.End.Stream
}
