package pipe

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerless/brokerless/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 10 * time.Second

// runPipe starts p.Run and returns its result channel.
func runPipe(ctx context.Context, p *Pipe) <-chan error {
	c := make(chan error, 1)
	go func() { c <- p.Run(ctx) }()
	return c
}

func waitRun(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
		return nil
	}
}

// waitAcked waits until src acknowledged stream up to seq.
func waitAcked(t *testing.T, src *ackingSource, stream transport.StreamID, seq uint64) {
	t.Helper()
	deadline := time.After(waitLimit)
	for src.ackedAt(stream) < seq {
		select {
		case <-src.changed:
		case <-deadline:
			t.Fatalf("acknowledged %s up to %d, want %d", stream, src.ackedAt(stream), seq)
		}
	}
}

// TestPipeForwardsAtLeastOnce: two source streams with a gap, receipts
// in random order: every message and the gap reach the destination once,
// with their origin, and every acknowledgement comes after the
// destination held everything it covers.
func TestPipeForwardsAtLeastOnce(t *testing.T) {
	t.Run("one at a time", func(t *testing.T) { pipeForwardsAtLeastOnce(t, false, false) })
	t.Run("batches", func(t *testing.T) { pipeForwardsAtLeastOnce(t, true, false) })
	t.Run("batch source", func(t *testing.T) { pipeForwardsAtLeastOnce(t, false, true) })
	t.Run("batch source, batches", func(t *testing.T) { pipeForwardsAtLeastOnce(t, true, true) })
}

// pipeForwardsAtLeastOnce is TestPipeForwardsAtLeastOnce, into a
// destination that takes many messages at once when batched, from a
// source that hands over many events at once (transport.BatchSubscriber) when
// batchSrc.
func pipeForwardsAtLeastOnce(t *testing.T, batched, batchSrc bool) {
	const n = 5000
	d := &dest{}
	var to transport.Publisher = d
	bd := &batchDest{dest: d}
	if batched {
		to = bd
	}
	given := map[transport.StreamID][]uint64{}
	src := newAckingSource(2*n+8, d.holds(given))
	src.events <- *startEv(feedA, 1)
	src.events <- *startEv(part0, 1)
	for s := uint64(1); s <= n; s++ {
		if s == 100 {
			src.events <- *gapEv(feedA, 100, 120, transport.GapUnrecoverable)
			given[feedA] = append(given[feedA], 120) // a marker stands at its end
			s = 120
			continue
		}
		src.events <- *msg(feedA, s)
		src.events <- *msg(part0, s)
		given[feedA] = append(given[feedA], s)
		given[part0] = append(given[part0], s)
	}
	src.events <- transport.Event{Kind: transport.EventStreamEnd, End: transport.StreamEnd{Stream: feedA, LastSeq: n, Reason: transport.EndClosed}}

	var from transport.Subscriber = src
	bs := &batchingSource{ackingSource: src}
	if batchSrc {
		from = bs
	}
	p, err := New(from, to, Config{MaxInFlight: 256})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	stop, tick := make(chan struct{}), make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case tick <- struct{}{}:
			}
		}
	}()
	shuffled := make(chan struct{})
	go func() { defer close(shuffled); d.shuffle(rand.New(rand.NewPCG(1, 2)), stop, tick) }()
	waitAcked(t, src, feedA, n)
	waitAcked(t, src, part0, n)
	// The end marker follows message n: acknowledging n does not mean
	// the pipe has written it. The destination keeps accepting until Run
	// has drained; stopping it first left the marker pending, and Run
	// failed after its DrainTimeout.
	deadline := time.After(waitLimit)
	for p.Stats().EndMarkers == 0 {
		select {
		case <-deadline:
			t.Fatal("the feed's end was never written")
		case <-time.After(time.Millisecond): // no event to wait on
		}
	}
	cancel()
	err = waitRun(t, done)
	close(stop)
	<-shuffled
	if err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	if len(src.errs) > 0 {
		t.Errorf("%d bad acknowledgements, first: %v", len(src.errs), src.errs[0])
	}
	src.mu.Unlock()
	seen := map[transport.StreamID]map[uint64]int{feedA: {}, part0: {}}
	var gaps []transport.Gap
	var ends []transport.StreamEnd
	for i := range d.held {
		if g, ok, _ := transport.ParseGapMarker(d.held[i]); ok {
			gaps = append(gaps, g)
			continue
		}
		if e, ok, _ := transport.ParseEndMarker(d.held[i]); ok {
			ends = append(ends, e)
			continue
		}
		o, ok, err := transport.ParseOrigin(d.held[i].Headers)
		if !ok || err != nil {
			t.Fatalf("record %d: no origin", i)
		}
		seen[o.Stream][o.Seq]++
	}
	for _, s := range []transport.StreamID{feedA, part0} {
		for _, seq := range given[s] {
			if seq != 120 || s != feedA {
				if seen[s][seq] != 1 {
					t.Fatalf("%s %d written %d times", s, seq, seen[s][seq])
				}
			}
		}
	}
	if len(gaps) != 1 || gaps[0] != (transport.Gap{Stream: feedA, From: 100, To: 120, Reason: transport.GapUnrecoverable}) {
		t.Errorf("gaps %+v", gaps)
	}
	if d.maxPending > 256 {
		t.Errorf("%d in flight, more than MaxInFlight", d.maxPending)
	}
	if bd.calls.Load() == 0 != !batched || batched && int(bd.messages.Load()) != d.published {
		t.Errorf("batched %v: %d batches of %d messages in all, %d published", batched, bd.calls.Load(), bd.messages.Load(), d.published)
	}
	// The feed's publisher closed it: its end is written once, as an
	// end marker (the log's stream has no end of that kind).
	if len(ends) != 1 || ends[0].Stream != feedA || ends[0].Reason != transport.EndClosed {
		t.Errorf("end markers %+v", ends)
	}
	if s := p.Stats(); s.Forwarded != uint64(len(d.held)-2) || s.Markers != 1 || s.EndMarkers != 1 || s.InFlight != 0 || s.Acks == 0 {
		t.Errorf("stats %+v", s)
	}
	if bs.calls == 0 != !batchSrc || batchSrc && bs.largest < 2 {
		t.Errorf("batch source %v: %d ReceiveBatch calls, the largest batch %d events", batchSrc, bs.calls, bs.largest)
	}
}

// TestPipeAcknowledgesOnlyAccepted: nothing is acknowledged while the
// destination has accepted nothing; what it accepted, once it has.
func TestPipeAcknowledgesOnlyAccepted(t *testing.T) {
	d := &dest{}
	src := newAckingSource(16, func(transport.StreamID, uint64) error { return nil })
	for s := uint64(1); s <= 10; s++ {
		src.events <- *msg(feedA, s)
	}
	p, _ := New(src, d, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	deadline := time.After(waitLimit)
	for {
		d.mu.Lock()
		n := len(d.pending)
		d.mu.Unlock()
		if n == 10 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("%d pending", n)
		case <-time.After(time.Millisecond): // polling a fake with no event to wait on
		}
	}
	if a := src.ackedAt(feedA); a != 0 {
		t.Fatalf("acknowledged %d before the destination accepted anything", a)
	}
	d.accept(4)
	waitAcked(t, src, feedA, 4)
	d.accept(-1)
	waitAcked(t, src, feedA, 10)
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
}

// TestPipeDestinationRefuses: a write the destination refuses stops the
// pipe with that error, naming the source position refused (one the
// destination will always refuse, too large, stops the pipe again when
// restarted: the operator must find it), and nothing from it on is
// acknowledged.
func TestPipeDestinationRefuses(t *testing.T) {
	d := &dest{failAt: 6}
	src := newAckingSource(16, func(transport.StreamID, uint64) error { return nil })
	for s := uint64(1); s <= 10; s++ {
		src.events <- *msg(feedA, s)
	}
	p, _ := New(src, d, Config{})
	err := runUntilFailed(t, p, d)
	if !strings.Contains(err.Error(), "write 6 refused") || !strings.Contains(err.Error(), feedA.String()+" position 6") {
		t.Errorf("Run: %v", err)
	}
	if a := src.ackedAt(feedA); a != 5 {
		t.Errorf("acknowledged up to %d, want 5", a)
	}
}

// TestPipeWithoutReceipts: a destination without receipts is flushed,
// and acknowledged after the flush.
func TestPipeWithoutReceipts(t *testing.T) {
	d := &dest{}
	given := map[transport.StreamID][]uint64{}
	src := newAckingSource(3000, d.holds(given))
	for s := uint64(1); s <= 3000; s++ {
		src.events <- *msg(feedA, s)
		given[feedA] = append(given[feedA], s)
	}
	p, _ := New(src, plainDest{d}, Config{MaxInFlight: 500})
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	waitAcked(t, src, feedA, 3000)
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	if len(d.held) != 3000 {
		t.Errorf("held %d, want 3000", len(d.held))
	}
	if len(src.errs) > 0 {
		t.Errorf("%d bad acknowledgements, first: %v", len(src.errs), src.errs[0])
	}
}

func TestPipeConfig(t *testing.T) {
	for _, cfg := range []Config{{MaxInFlight: -1}, {FlushInterval: -1}, {DrainTimeout: -1}} {
		if _, err := New(newSource(1), &dest{}, cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// window is a fake direct feed: a publisher's retransmit window of w
// messages over a stream whose publisher has published up to head.
type window struct {
	stream transport.StreamID
	w      uint64
	head   uint64
}

// join is what a subscriber joining with join=earliest gets: a stream
// start at the window's low edge, then the window's messages.
func (f *window) join(src *source) {
	low := max(1, f.head-f.w+1)
	src.events <- *startEv(f.stream, low)
	for s := low; s <= f.head; s++ {
		src.events <- *msg(f.stream, s)
	}
}

func (f *window) publish(src *source, n uint64) {
	for range n {
		f.head++
		src.events <- *msg(f.stream, f.head)
	}
}

// TestPipeKillLoopWithoutAcks: a source that cannot be acknowledged (a
// multicast feed with a window of 500) and a pipe killed ten times, with
// what was in flight lost, and restarted after its source published
// either less (the window replays what it missed) or more (messages are
// gone) than its window. Afterwards every message is in the destination
// exactly once or covered by a gap marker, and each marker covers
// exactly what the window no longer held.
func TestPipeKillLoopWithoutAcks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	f := &window{stream: feedA, w: 500}
	d := &dest{}
	var wantGaps []transport.Gap
	for round := range 11 {
		src := newSource(4096)
		p, err := New(src, d, Config{MaxInFlight: 64, DrainTimeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		tail, _ := d.Tail(context.Background(), DefaultTailRecords)
		if _, err := p.Resume(tail); err != nil {
			t.Fatal(err)
		}
		f.join(src)
		f.publish(src, 1000)
		ctx, cancel := context.WithCancel(context.Background())
		done := runPipe(ctx, p)
		// Accept part of what arrives, then kill: the rest is lost.
		for accepted := 0; accepted < 600; {
			d.mu.Lock()
			n := len(d.pending)
			d.mu.Unlock()
			if n == 0 {
				time.Sleep(100 * time.Microsecond) // the fake gives no event to wait on
				continue
			}
			k := min(n, 600-accepted)
			d.accept(k)
			accepted += k
		}
		cancel()
		_ = waitRun(t, done) // the drain times out: nothing more is accepted
		d.kill()
		if round == 10 {
			break
		}
		// Down while the source publishes: within the window or past it.
		d.mu.Lock()
		last := lastWritten(t, d.held)
		d.mu.Unlock()
		down := uint64(rng.IntN(2)) * 700
		down += uint64(rng.IntN(200))
		f.head += down
		if low := f.head - f.w + 1; low > last+1 {
			wantGaps = append(wantGaps, transport.Gap{Stream: feedA, From: last + 1, To: low - 1, Reason: transport.GapSourceDown})
		}
	}
	seen := map[uint64]int{}
	var gaps []transport.Gap
	for i := range d.held {
		if g, ok, _ := transport.ParseGapMarker(d.held[i]); ok {
			gaps = append(gaps, g)
			for s := g.From; s <= g.To; s++ {
				seen[s]++
			}
			continue
		}
		o, _, _ := transport.ParseOrigin(d.held[i].Headers)
		seen[o.Seq]++
	}
	last := lastWritten(t, d.held)
	for s := uint64(1); s <= last; s++ {
		if seen[s] != 1 {
			t.Fatalf("seq %d written %d times (last written %d)", s, seen[s], last)
		}
	}
	if len(wantGaps) == 0 || len(gaps) != len(wantGaps) {
		t.Fatalf("gap markers %+v, want %+v", gaps, wantGaps)
	}
	for i := range gaps {
		if gaps[i] != wantGaps[i] {
			t.Errorf("gap marker %d: %+v, want %+v", i, gaps[i], wantGaps[i])
		}
	}
}

// lastWritten is the last source position the destination holds.
func lastWritten(t *testing.T, held []transport.Message) uint64 {
	t.Helper()
	var last uint64
	for i := range held {
		if _, _, pos, _, ok, _ := span(&held[i]); ok {
			last = max(last, pos)
		}
	}
	return last
}

// TestPipeRefusedReceipt: a receipt the core refuses (for a write not in
// flight: a destination's bug) fails the pipe, though the core takes it
// only when the pipe's lock is next held.
func TestPipeRefusedReceipt(t *testing.T) {
	p, err := New(newSource(1), &dest{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.accepted(99, nil)
	if err := p.failure(); err != nil {
		t.Fatalf("failed before the core took the receipt: %v", err)
	}
	p.Stats() // holds the lock
	if err := p.failure(); !errors.Is(err, ErrBadTicket) {
		t.Errorf("failure: %v, want %v", err, ErrBadTicket)
	}
}

// TestPipeStopsUnderLoad: a pipe whose source always has events (its
// Receive never blocks) and whose destination keeps up still stops when
// its context ends.
func TestPipeStopsUnderLoad(t *testing.T) {
	d := &instantDest{n: 100000, reached: make(chan struct{})}
	reached := d.reached
	p, err := New(newGenSource(), d, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	<-reached
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestPipeOldest: Oldest names the oldest write the destination has not
// accepted, and nothing once everything is.
func TestPipeOldest(t *testing.T) {
	d := &dest{}
	src := newAckingSource(16, func(transport.StreamID, uint64) error { return nil })
	for s := uint64(1); s <= 5; s++ {
		src.events <- *msg(feedA, s)
	}
	p, _ := New(src, d, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	deadline := time.After(waitLimit)
	pending := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.pending)
	}
	for pending() < 5 {
		select {
		case <-deadline:
			t.Fatal("5 writes never published")
		case <-time.After(time.Millisecond): // the fake gives no event to wait on
		}
	}
	if s, pos, ok := p.Oldest(); !ok || s != feedA || pos != 1 {
		t.Errorf("oldest %v %d %v, want %v 1", s, pos, ok, feedA)
	}
	d.accept(2)
	for p.Stats().InFlight > 3 {
		select {
		case <-deadline:
			t.Fatal("2 receipts never taken")
		case <-time.After(time.Millisecond):
		}
	}
	if s, pos, ok := p.Oldest(); !ok || s != feedA || pos != 3 {
		t.Errorf("after 2 receipts oldest %v %d %v, want %v 3", s, pos, ok, feedA)
	}
	d.accept(-1)
	for p.Stats().InFlight > 0 {
		select {
		case <-deadline:
			t.Fatal("receipts never taken")
		case <-time.After(time.Millisecond):
		}
	}
	if _, _, ok := p.Oldest(); ok {
		t.Error("oldest with nothing in flight")
	}
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
}
