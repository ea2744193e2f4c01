package pipe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Defaults of Config.
const (
	// DefaultTailRecords is how many of a destination's last records,
	// per destination stream, are enough to resume from: they must
	// reach back to the last record of every source stream.
	DefaultTailRecords   = 1024
	DefaultFlushInterval = 5 * time.Millisecond
	DefaultDrainTimeout  = 5 * time.Second
	// DefaultMaxLookback bounds how far back (Config.Back) a pipe
	// reads each destination stream when it starts, and LookbackPage
	// how many records it reads at once.
	DefaultMaxLookback = 1 << 20
	LookbackPage       = 4096
	// DefaultRereadTimeout bounds a read of the destination again
	// (Config.Tail) at a stream's start, look-back included.
	DefaultRereadTimeout = 10 * time.Second
)

// Config configures a Pipe. Zero fields take the documented defaults.
type Config struct {
	// MaxInFlight bounds the events passed on to the destination and not
	// yet accepted by it: what a killed pipe may write twice. (Events
	// received when none more may be in flight, at most one batch of a
	// source that hands over many at once, wait unwritten.)
	// Default DefaultMaxInFlight.
	MaxInFlight int
	// MaxInFlightBytes bounds them by size (payload, key and headers):
	// no more events are taken once those in flight hold this much.
	// Default DefaultMaxInFlightBytes.
	MaxInFlightBytes int
	// FlushInterval: a destination without receipts (no
	// transport.ReceiptPublisher) is flushed this often, and what was
	// published before a flush that succeeded counts as accepted.
	// Default 5 ms.
	FlushInterval time.Duration
	// DrainTimeout bounds how long Run, once its context ends, waits for
	// the destination to accept what is in flight and acknowledges it,
	// and then the last flush of a destination without receipts.
	// Default 5 s.
	DrainTimeout time.Duration
	// Now is the clock of gap markers. Default time.Now.
	Now func() time.Time
	// Back, the destination's, when it has one, is read further back
	// than the tail given to Resume for a log's source stream the tail
	// did not reach (a partition of a consumer group's source that the pipe
	// had not written for the last DefaultTailRecords records of the
	// destination), or not back to the stream's first event (a group
	// that committed less than the tail holds), in pages of
	// LookbackPage records, up to MaxLookback records of each
	// destination stream (default DefaultMaxLookback). Without it such
	// a stream is written as if the destination did not hold it
	// (Stats.Unresumed counts the first kind), or what is older than
	// what was read of it is. A page that cannot be read fails the
	// pipe, except at a stream's start that Tail is read for, whose
	// reads its pages are (see Tail).
	Back        transport.BackReader
	MaxLookback int
	// Tail, the destination's, when it has one, is read again for a
	// source that is acknowledged (a consumer group) each time it
	// starts a log's stream (a transport.StreamStart of a stream with a
	// topic: a partition a rebalance gave this member, or gave back
	// to it), before the
	// stream's first event is taken, and what it holds is added to what
	// Resume read (Core.Reread): what the partition's previous owner
	// wrote and had not committed, which the source delivers again, is
	// dropped, not written twice, as a Kafka Connect sink task reads
	// the state of the partitions it is assigned. It costs, per stream
	// started, a read of the last record of each destination stream,
	// then of what the destination was given since the pipe last read
	// it (Core.Unread): nothing when nothing was (the first starts of a
	// group member whose destination nobody else writes), its own
	// writes and another member's else. Only when that, with the
	// record read before it, is a full tail or more (a destination
	// stream grew by DefaultTailRecords-1, 1,023 records, or more), or
	// more is written between the two reads, or a destination stream
	// ends before what was read of it or holds nothing (deleted and
	// made again: what was read of it is then forgotten, see the
	// package documentation), does it read DefaultTailRecords of each
	// destination stream again, and, for a stream that tail does not
	// reach, look back (Back) from where it starts, up to MaxLookback
	// records again. The pages read further back at a start (from that
	// tail, or from Resume's at the first starts) are reads of it too.
	// A read that fails, or takes longer than RereadTimeout, does not
	// fail the pipe: it is counted (Stats.RereadsFailed) and the stream
	// resumes from what was read before, written again at worst (not
	// lost: only positions of records read are dropped).
	// Without it a stream started mid-run resumes from what Resume read
	// when the pipe started.
	Tail transport.TailReader
	// RereadTimeout bounds the reads of Tail at a stream's start, all
	// of them and the pages of Back that follow, which hold up
	// forwarding: a destination that does not answer (it takes the
	// connection, or its client retries) is given up on after it, as a
	// read that fails is (Stats.RereadsFailed). A look-back of up to
	// MaxLookback records must fit in it too: raise it where that takes
	// longer. Default DefaultRereadTimeout.
	RereadTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxLookback == 0 {
		c.MaxLookback = DefaultMaxLookback
	}
	if c.RereadTimeout == 0 {
		c.RereadTimeout = DefaultRereadTimeout
	}
}

func (c *Config) validate() error {
	switch {
	case c.MaxInFlight < 1:
		return &ConfigError{Field: "MaxInFlight", Value: c.MaxInFlight, Want: "must be ≥ 1"}
	case c.MaxInFlightBytes < 1:
		return &ConfigError{Field: "MaxInFlightBytes", Value: c.MaxInFlightBytes, Want: "must be ≥ 1"}
	case c.FlushInterval < 0:
		return &ConfigError{Field: "FlushInterval", Value: c.FlushInterval, Want: "must be ≥ 0"}
	case c.DrainTimeout < 0:
		return &ConfigError{Field: "DrainTimeout", Value: c.DrainTimeout, Want: "must be ≥ 0"}
	case c.MaxLookback < 0:
		return &ConfigError{Field: "MaxLookback", Value: c.MaxLookback, Want: "must be ≥ 0"}
	case c.RereadTimeout < 0:
		return &ConfigError{Field: "RereadTimeout", Value: c.RereadTimeout, Want: "must be ≥ 0"}
	}
	return nil
}

// Pipe forwards the events of a subscriber to a publisher, at least
// once (see the package documentation).
type Pipe struct {
	cfg     Config
	from    transport.Subscriber
	acker   transport.Acknowledger // nil when the source cannot be acknowledged
	to      transport.ReceiptPublisher
	batch   batchPublisher   // to, when it takes many messages at once
	inPlace inPlacePublisher // to, when it takes them without a copy
	// batchFrom is from, when it hands over many events at once.
	batchFrom transport.BatchSubscriber
	flush     *flushReceipts // non-nil when to adapts a publisher without receipts
	rereads   bool           // the destination is read again when the source starts a log's stream (Config.Tail)

	mu     sync.Mutex
	core   *Core
	failed error // the first receipt or acknowledgement error
	// stopForward ends Run's forwarding, and stopPublish its publishing,
	// when something fails.
	stopForward context.CancelCauseFunc
	stopPublish context.CancelFunc
	batches     *handoff
	// acceptedQ holds receipts until the core takes them (lock); spare
	// is the slice it takes them in.
	acceptedQ    acceptedQueue
	spare        []uint64
	failOnUnlock bool // failed was set by lock: unlock stops the pipe
	acked        uint64
	room         chan struct{} // signalled when events retire or a failure is recorded
	acks         chan struct{} // signalled when acknowledgements are ready
}

// New returns a Pipe from from to to. It acknowledges from when from is
// a transport.Acknowledger, and takes to's receipts when to is a
// transport.ReceiptPublisher; otherwise it flushes to every
// FlushInterval. The caller keeps from and to, and closes them after
// Run.
func New(from transport.Subscriber, to transport.Publisher, cfg Config) (*Pipe, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	core, err := NewCore(cfg.MaxInFlight, cfg.MaxInFlightBytes)
	if err != nil {
		return nil, err
	}
	p := &Pipe{cfg: cfg, from: from, core: core, room: make(chan struct{}, 1), acks: make(chan struct{}, 1), batches: newHandoff()}
	p.acker = Acknowledger(from)
	p.batchFrom, _ = from.(transport.BatchSubscriber)
	p.rereads = p.acker != nil && cfg.Tail != nil
	if rp, ok := to.(transport.ReceiptPublisher); ok {
		p.to = rp
		p.batch, _ = to.(batchPublisher)
		p.inPlace, _ = to.(inPlacePublisher)
	} else {
		p.flush = newFlushReceipts(to, cfg.DrainTimeout)
		p.to = p.flush
	}
	return p, nil
}

// Acknowledger returns sub's transport.Acknowledger when it offers
// at-least-once consumption (it claims transport.AtLeastOnce), else nil:
// a subscriber outside a consumer group may have the method and nothing
// to acknowledge to.
func Acknowledger(sub transport.Subscriber) transport.Acknowledger {
	if a, ok := sub.(transport.Acknowledger); ok && sub.Semantics().Has(transport.AtLeastOnce) {
		return a
	}
	return nil
}

// Acknowledges reports whether the source is acknowledged.
func (p *Pipe) Acknowledges() bool { return p.acker != nil }

// Resume resumes from the destination's last records, as
// Core.Resume does, or Core.ResumeAcknowledged when the source is
// acknowledged (Acknowledges); read them with a transport.TailReader, at
// most DefaultTailRecords per destination stream. It returns how many
// source streams the destination held.
func (p *Pipe) Resume(tail []transport.Message) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.acker != nil {
		return p.core.ResumeAcknowledged(tail)
	}
	return p.core.Resume(tail)
}

// TailError is Core.TailError: the first record given to Resume whose
// origin headers do not decode.
func (p *Pipe) TailError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.TailError()
}

// Oldest returns the source stream and position of the oldest write
// in flight (a gap marker's end), the one the destination has still to
// accept before anything after it is acknowledged; ok is false when
// nothing is in flight.
func (p *Pipe) Oldest() (stream transport.StreamID, pos uint64, ok bool) {
	p.lock()
	defer p.unlock()
	return p.core.position(p.core.head)
}

// Stats returns the counters.
func (p *Pipe) Stats() Stats {
	p.lock()
	defer p.unlock()
	s := p.core.Stats()
	s.Acks = p.acked
	return s
}

// Run forwards until ctx ends (it then waits, at most DrainTimeout, for
// the destination to accept what is in flight, acknowledges it and
// returns nil) or until the source, the destination or an
// acknowledgement fails (it returns that error; after the source's, it
// waits for what is in flight as after ctx's end). It receives on the
// calling goroutine and publishes on another, so that each has a core.
func (p *Pipe) Run(ctx context.Context) error {
	stop := make(chan struct{})     // closed when the pipe is done
	received := make(chan struct{}) // closed when nothing more is received
	fctx, stopForward := context.WithCancelCause(ctx)
	pctx, stopPublish := context.WithCancel(context.WithoutCancel(ctx))
	p.mu.Lock()
	p.stopForward, p.stopPublish = stopForward, stopPublish
	p.mu.Unlock()
	var wg sync.WaitGroup
	if p.flush != nil {
		wg.Go(func() { p.flush.loop(p.cfg.FlushInterval, stop) })
	}
	wg.Go(func() { p.publishLoop(pctx, received) })
	ackCtx, cancelAcks := context.WithCancel(context.WithoutCancel(ctx))
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		p.ackLoop(ackCtx, stop)
	}()

	err := p.forward(fctx)
	stopForward(nil)
	close(received)
	if f := p.failure(); f != nil {
		err = f
	} else if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = nil
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.DrainTimeout)
	if p.failure() == nil {
		// The destination is fine, though the source may have failed:
		// what was received from it is written all the same (a source
		// that cannot be acknowledged does not deliver it again).
		err = errors.Join(err, p.drain(drainCtx))
	}
	stopPublish()
	close(stop)
	wg.Wait()
	select {
	case <-ackDone:
	case <-drainCtx.Done():
		cancelAcks()
		<-ackDone
	}
	cancel()
	cancelAcks()
	if f := p.failure(); f != nil && !errors.Is(err, f) {
		err = errors.Join(err, f)
	}
	return err
}

// forward takes events from the source while there is room in flight,
// and hands what the core makes of them to publishLoop. It receives
// before it looks for room, so that one lock hold checks the room and
// passes the events on; events received when there is none (at most one
// batch of the source's) wait in evs, not in flight, until there is.
func (p *Pipe) forward(ctx context.Context) error {
	var one [1]transport.Event
	var evs []transport.Event // received, not yet taken by the core
	done := ctx.Done()
	for {
		// A source that always has events never blocks in Receive,
		// and a destination that keeps up leaves room: only this
		// notices the end.
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		if len(evs) == 0 {
			var err error
			if evs, err = p.receive(ctx, one[:]); err != nil {
				return err
			}
		}
		n, held, look, reread := p.take(evs)
		// The events stay valid until the next receive, which only this
		// goroutine calls.
		evs = evs[n:]
		if held {
			signal(p.acks) // a message the destination held may be acknowledged at once
		}
		if reread {
			if err := p.reread(ctx, &evs[0]); err != nil {
				return err
			}
			continue
		}
		if look {
			if err := p.lookBack(ctx, &evs[0]); err != nil {
				return err
			}
			continue
		}
		if len(evs) > 0 {
			if err := p.waitRoom(ctx, false); err != nil {
				return err
			}
		}
	}
}

// applyBatch is how many receipts take lets wait for the ack loop
// while there is room: taking them costs it a lock shared with the
// destination's receipts, so it does not for every event.
const applyBatch = 64

// forwardBatch bounds the events forward takes from a transport.BatchSubscriber at
// once, and so how long it holds the pipe's lock.
const forwardBatch = 256

// receive returns the next events from the source: a batch from a
// transport.BatchSubscriber (which spares a Receive call and a copy of
// each event, and lets take hold the lock once for all of them), else
// one event, in one.
func (p *Pipe) receive(ctx context.Context, one []transport.Event) ([]transport.Event, error) {
	if p.batchFrom != nil {
		return p.batchFrom.ReceiveBatch(ctx, forwardBatch)
	}
	ev, err := p.from.Receive(ctx)
	if err != nil {
		return nil, err
	}
	one[0] = ev
	return one, nil
}

// take passes events to the core while it has room and nothing failed,
// and adds what the core makes of them to the batch publishLoop takes,
// holding each lock once. It returns how many events it took (none once
// the pipe failed: forward's waitRoom returns the failure), and whether
// one of them was held by the destination already (no write: it may be
// acknowledged at once).
//
// It stops at an event whose stream must be looked for further back in
// the destination first (look: see lookBack), and at the start of a
// log's stream that the destination must be read again for first
// (reread: see Config.Tail).
func (p *Pipe) take(evs []transport.Event) (n int, held, look, reread bool) {
	h := p.batches
	added := false
	p.mu.Lock()
	if p.acceptedQ.n.Load() >= applyBatch {
		p.applyReceipts()
	}
	h.mu.Lock()
	for n < len(evs) && p.failed == nil {
		if p.core.Full() {
			if p.applyReceipts(); p.core.Full() {
				break
			}
		}
		if reread = p.rereads && p.core.NeedsReread(&evs[n]); reread {
			break
		}
		if p.cfg.Back != nil {
			if src, pos, ok := eventPosition(&evs[n]); ok {
				if _, _, look = p.core.LookFor(src, pos, p.cfg.MaxLookback); look {
					break
				}
			}
		}
		// ws stays valid until the next Event.
		ws := p.core.Event(&evs[n], p.cfg.Now)
		for i := range ws {
			h.add(&ws[i])
		}
		added = added || len(ws) > 0
		held = held || len(ws) == 0
		n++
	}
	h.mu.Unlock()
	p.unlock()
	if added {
		signal(h.ready)
	}
	return n, held, look, reread
}

// batchPublisher is a destination that takes many messages at once
// (package transport/kafka's Publisher): what it offers for PublishReceipt
// of each, at a fraction of the cost for small messages. It returns how
// many of ms it took, their done called with their index.
type batchPublisher interface {
	PublishReceipts(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error)
}

// inPlacePublisher is a batchPublisher that can also publish without
// copying the messages' bytes (package transport/kafka's Publisher):
// they must stay unchanged until done has been called for each, which
// a batch's do, as it is reused only then.
type inPlacePublisher interface {
	PublishReceiptsInPlace(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error)
}

// publishLoop publishes the batches forward hands over, until received
// is closed and the last batch is published, or ctx ends.
func (p *Pipe) publishLoop(ctx context.Context, received <-chan struct{}) {
	for {
		last := false
		select {
		case <-p.batches.ready:
		case <-received:
			last = true
		case <-ctx.Done():
			return
		}
		for more := true; more; {
			var b *batch
			b, more = p.batches.take()
			if err := p.publish(ctx, b); err != nil {
				p.fail(fmt.Errorf("pipe: writing to the destination: %w", err))
				return
			}
		}
		if last {
			return
		}
	}
}

// publish hands b's writes to the destination, their receipts to come.
func (p *Pipe) publish(ctx context.Context, b *batch) error {
	b.left.Store(int64(len(b.msgs)) + 1) // one more, given back below: b is ours until then
	var err error
	switch {
	case len(b.msgs) == 0:
	case p.inPlace != nil:
		_, err = p.inPlace.PublishReceiptsInPlace(ctx, b.msgs, p.batchReceipt(b))
	case p.batch != nil:
		_, err = p.batch.PublishReceipts(ctx, b.msgs, p.batchReceipt(b))
	default:
		for i := range b.msgs {
			if err = p.to.PublishReceipt(ctx, b.msgs[i], p.receipt(b, i)); err != nil {
				break
			}
		}
	}
	if err == nil {
		p.batches.done(b)
	}
	return err
}

// batchReceipt is the done callback of a batch's writes.
func (p *Pipe) batchReceipt(b *batch) func(int, transport.Receipt, error) {
	return func(i int, _ transport.Receipt, err error) {
		p.accepted(b.tickets[i], err)
		p.batches.done(b)
	}
}

// waitRoom waits until the core has room for an event or, with empty,
// until nothing is in flight.
func (p *Pipe) waitRoom(ctx context.Context, empty bool) error {
	for {
		p.lock()
		ready := !p.core.Full()
		if empty {
			ready = p.core.InFlight() == 0
		}
		err := p.failed
		p.unlock()
		switch {
		case err != nil:
			return err
		case ready:
			return nil
		}
		select {
		case <-p.room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// receipt is the done callback of write i of batch b.
func (p *Pipe) receipt(b *batch, i int) func(transport.Receipt, error) {
	return func(_ transport.Receipt, err error) {
		p.accepted(b.tickets[i], err)
		p.batches.done(b)
	}
}

// accepted takes the destination's answer for the write of ticket: a
// receipt waits in acceptedQ for the core, a refusal fails the pipe with
// an error that names the source position written, so that one the
// destination will always refuse (too large) can be found.
func (p *Pipe) accepted(ticket uint64, err error) {
	if err == nil {
		p.acceptedQ.add(ticket)
	} else {
		p.mu.Lock()
		stream, pos, ok := p.core.position(ticket)
		p.mu.Unlock()
		if ok {
			err = fmt.Errorf("pipe: the destination did not accept the write of %s position %d: %w", stream, pos, err)
		} else {
			err = fmt.Errorf("pipe: the destination did not accept a message: %w", err)
		}
		p.fail(err)
	}
	signal(p.room)
	signal(p.acks)
}

// drain waits for what is in flight to be accepted.
func (p *Pipe) drain(ctx context.Context) error {
	err := p.waitRoom(ctx, true)
	if errors.Is(err, context.DeadlineExceeded) {
		p.lock()
		n := p.core.InFlight()
		p.unlock()
		return fmt.Errorf("pipe: %d messages still not accepted by the destination after %v", n, p.cfg.DrainTimeout)
	}
	return err
}

// ackLoop acknowledges the source whenever receipts allow, and once more
// when stop is closed.
func (p *Pipe) ackLoop(ctx context.Context, stop <-chan struct{}) {
	var buf []Ack
	for {
		last := false
		select {
		case <-p.acks:
		case <-stop:
			last = true
		}
		p.lock()
		buf = p.core.TakeAcks(buf[:0])
		p.unlock()
		if p.acker != nil {
			for _, a := range buf {
				if err := p.acker.Ack(ctx, a.Stream, a.Seq); err != nil {
					p.fail(fmt.Errorf("pipe: acknowledging %s up to %d: %w", a.Stream, a.Seq, err))
					return
				}
				p.mu.Lock()
				p.acked++
				p.mu.Unlock()
			}
		}
		if last {
			return
		}
	}
}

// fail records the first failure, and stops forwarding.
func (p *Pipe) fail(err error) {
	p.mu.Lock()
	if p.failed == nil {
		p.failed = err
	}
	stopForward, stopPublish := p.stopForward, p.stopPublish
	p.mu.Unlock()
	if stopForward != nil {
		stopForward(err)
		stopPublish()
	}
	signal(p.room)
}

func (p *Pipe) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// signal wakes whoever waits on c, without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
