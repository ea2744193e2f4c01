package multicast

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// Publisher sends one stream to a multicast group and answers NACKs.
// It is safe for concurrent use.
//
// Publish packs messages into the engine's current datagram. A paced
// caller's Publish writes it itself (Config.InlineAfter); a caller in a
// tight loop, or one that finds a write in flight, leaves it to a
// sender goroutine that hands datagrams to the kernel in batches. While
// a write is in flight, messages accumulate and go out together ("smart
// batching"): at low rates each message leaves at once, at high rates
// datagrams are full. PublishReceipt also tells when a message has been handed to the
// kernel, and where it landed. PublishBatch and PublishReceipts take many
// messages a call, at a fraction of the cost a message.
type Publisher struct {
	cfg   Config
	conn  *net.UDPConn
	batch *ipv4.PacketConn
	group *net.UDPAddr
	mtu   int  // the engine's MTU: the largest datagram it builds
	gso   bool // send runs of datagrams with UDP GSO; owned by the holder of writing
	// writeBatch is batch.WriteBatch (tests replace it while no write is
	// in flight); called by the holder of writing.
	writeBatch func([]ipv4.Message, int) (int, error)
	send       *sendSocket // what writeBatch sends through, when not conn (sendsock_linux.go)

	mu         sync.Mutex
	clock      pubClock // Publish's clock when Config.Now is time.Now by default
	fastNow    bool     // use clock, not Config.Now
	eng        *reliable.Sender
	idle       bool          // the sender goroutine waits for wake
	waiters    int           // Publish/Flush calls waiting for progress
	flushers   int           // of which Flush calls
	progress   chan struct{} // closed and replaced when the sender made progress
	writing    bool          // a datagram or batch is being written outside the lock
	round      *sendRound    // the scratch of whoever holds writing
	lastCall   time.Time     // when the last Publish call returned (began, when it handed off)
	quick      int           // Publish calls in a row back sooner than inlineAfter() after the last
	lastInline time.Duration // how long the last inline write took (0: none yet)
	behind     bool          // the last inline write took at least as long as its caller had been away before it
	closing    bool
	lastNack   time.Time
	stats      PublisherStats
	rcpt       receipts // messages waiting for their receipt

	inbox inbox // NACKs read by controlLoop, answered by sendLoop

	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

var (
	_ transport.Publisher        = (*Publisher)(nil)
	_ transport.ReceiptPublisher = (*Publisher)(nil)
)

// NewPublisher opens the publisher's socket on cfg.Interface and starts
// its goroutines.
func NewPublisher(ctx context.Context, cfg Config) (*Publisher, error) {
	defaultClock := cfg.Now == nil
	ifi, addr, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	scfg := cfg.Sender
	scfg.Feed, scfg.Rand, scfg.UnicastRepairs = cfg.Feed, cfg.Rand, cfg.UnicastRepairs || scfg.UnicastRepairs
	if cfg.Key != nil {
		scfg.Key = cfg.Key
	}
	gso := !cfg.NoOffload && gsoAvailable()
	// Full datagrams of one size make long GSO runs.
	scfg.PadFull = scfg.PadFull || gso
	eng, err := reliable.NewSender(scfg, cfg.Now())
	if err != nil {
		return nil, engineConfigError(err, "Sender.")
	}
	conn, err := listenUDP(ctx, netip.AddrPortFrom(addr, 0), reusePort)
	if err != nil {
		return nil, err
	}
	if err := setupSender(conn, ifi, &cfg); err != nil {
		conn.Close()
		return nil, err
	}
	p := &Publisher{
		cfg:      cfg,
		conn:     conn,
		batch:    ipv4.NewPacketConn(conn),
		group:    net.UDPAddrFromAddrPort(cfg.Group),
		mtu:      cmp.Or(scfg.MTU, reliable.DefaultMTU),
		gso:      gso,
		eng:      eng,
		progress: make(chan struct{}),
		inbox:    newInbox(1024),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	p.writeBatch = p.batch.WriteBatch
	p.fastNow = defaultClock
	p.stats.GSO = gso
	_, p.stats.SendBuffer = bufferSizes(conn, cfg.RecvBuffer, cfg.SendBuffer, cfg.Logger)
	if ss, granted, err := openSendSocket(conn, ifi, &cfg); err == nil {
		p.send, p.writeBatch, p.stats.SendBuffer = ss, ss.writeBatch, granted
	} else if !errors.Is(err, errors.ErrUnsupported) {
		cfg.Logger.Warn("multicast: sending through the NACK socket", "err", err)
	}
	gather := cfg.Batch
	if gso {
		gather *= gsoGather
	}
	p.round = newSendRound(gather, p.mtu)
	rb, err := newReadBatch(conn, cfg.Batch, reliable.MaxControlLen, false)
	if err != nil {
		conn.Close()
		return nil, err
	}
	p.wg.Add(2)
	go p.sendLoop()
	go p.controlLoop(rb)
	return p, nil
}

// Stream is the publisher's stream identity.
func (p *Publisher) Stream() transport.StreamID { return p.eng.Stream() }

// LocalAddr is the unicast address the publisher sends from and takes
// NACKs on.
func (p *Publisher) LocalAddr() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Semantics: ordered, deduplicated, recovered within the retransmit
// window, gaps reported.
func (p *Publisher) Semantics() transport.Semantics { return semantics }

const semantics = transport.Ordered | transport.GapReports | transport.Retransmit | transport.Deduplicated

// Stats returns a snapshot of the counters.
func (p *Publisher) Stats() PublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.SenderStats = p.eng.Stats()
	s.InboxDrops = p.inbox.drops()
	return s
}

// Publish queues m. It blocks, honouring ctx, while the send queue is
// full, and, with flow control (Config.Sender.Flow), while the
// receivers it waits for are behind (unless Config.FlowFail).
func (p *Publisher) Publish(ctx context.Context, m transport.Message) error {
	return p.publish(ctx, &m, nil)
}

// PublishReceipt is Publish that also calls done, once m has been handed
// to the network, with m's stream (Feed and Session) and the sequence
// number of its first fragment (transport.Message.Seq as subscribers
// will see it).
//
// Handed to the network means: the datagram carrying m's last fragment
// was written to the socket (sendmmsg or sendto returned), not merely
// queued; for a message published while the send goroutine is busy,
// that is when its batch is written. Multicast is not durable, so that
// is all a receipt says: nothing about any subscriber having m, which
// the retransmit window may still repair for them. done gets an error
// when the kernel refused a datagram carrying part of m (m stays in the
// retransmit window, so a subscriber may still repair it), or
// transport.ErrClosed when the Publisher closed before sending m.
//
// done is called exactly once per message whose PublishReceipt returned
// nil, in publish order, on the Publisher's send goroutine, and before
// Close returns. It must not block, nor call the Publisher: the next
// datagrams wait for it. A nil done makes PublishReceipt a Publish.
func (p *Publisher) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	return p.publish(ctx, &m, done)
}

func (p *Publisher) publish(ctx context.Context, m *transport.Message, done func(transport.Receipt, error)) error {
	p.mu.Lock()
	now := p.publishNow()
	waited, err := p.enqueue(ctx, &now, m, pendingReceipt{done: done})
	if err != nil {
		p.mu.Unlock()
		return err
	}
	p.handOff(now, waited)
	return nil
}

// enqueue hands m to the engine at *now, its publish time unless m has
// one, with a receipt when r has a done. It waits, honouring ctx, while
// flow control or the full send queue holds m (unless Config.FlowFail),
// then reads the clock again into *now, and reports whether it waited.
// p.mu is held on entry and on return, also with an error.
func (p *Publisher) enqueue(ctx context.Context, now *time.Time, m *transport.Message, r pendingReceipt) (waited bool, err error) {
	for {
		if p.closing {
			return waited, transport.ErrClosed
		}
		seq, err := p.eng.Publish(*now, m)
		if err == nil {
			if r.done != nil || r.batchDone != nil {
				r.first, r.last = seq, p.eng.NextSeq()-1
				p.rcpt.push(r)
			}
			return waited, nil
		}
		held := errors.Is(err, reliable.ErrFlowControl)
		if held && p.cfg.FlowFail {
			return waited, fmt.Errorf("multicast: %w", err)
		}
		if !held && !errors.Is(err, reliable.ErrBackpressure) {
			if errors.Is(err, reliable.ErrTooLarge) {
				return waited, fmt.Errorf("%w: %w", transport.ErrTooLarge, err)
			}
			return waited, err
		}
		if err := p.waitProgress(ctx); err != nil {
			return waited, err
		}
		*now = p.publishNow()
		waited = true
	}
}

// handOff sends what a Publish call packed, the call having begun at
// now: itself, or by waking the send goroutine. p.mu is held on entry
// and released on return.
func (p *Publisher) handOff(now time.Time, waited bool) {
	// A caller back within InlineAfter is in a tight loop (or faster
	// than one datagram per message can follow): its messages
	// accumulate while the send goroutine writes, and leave in full
	// datagrams, in runs. A paced caller writes at once, also when its
	// last write took longer than it had been away before it (longer
	// than its pace) and it comes back at once, for up to inlineRun
	// calls, for the messages that fell due meanwhile: handed to the
	// send goroutine, they waited for the scheduler to run it (at
	// 30,000 msgs/s on lo, 43% of the messages, and the p50 latency was
	// 2.5–3× raw UDP's). A burst after a pause, whose first write was
	// short, is handed off from its second message, as a tight loop.
	away := now.Sub(p.lastCall)
	if away >= p.inlineAfter() {
		p.quick = 0
	} else {
		p.quick++
	}
	if !p.writing && !waited && (p.quick == 0 || p.behind && p.quick < inlineRun) {
		p.sendInline(now, away)
		return
	}
	p.lastCall = now
	p.wakeSender()
}

// wakeSender wakes the send goroutine if it sleeps. p.mu is held on
// entry and released on return.
func (p *Publisher) wakeSender() {
	wake := p.idle
	p.idle = false
	p.mu.Unlock()
	if wake {
		p.signal()
	}
}

// inlineAfter is how long a caller must have been away since its last
// Publish for this one to write itself: Config.InlineAfter, or less,
// the time the last inline write took. A caller away longer than a
// write takes finds it done when it comes back: handed to the send
// goroutine, its messages would leave one a datagram all the same, each
// later by the goroutine's wake-up (at 100,000 msgs/s on lo, paced every
// 10 µs and away 6 µs of them, 12 µs at the median from Publish to the
// kernel against raw sendto's 0.8 µs). Called with p.mu held.
func (p *Publisher) inlineAfter() time.Duration {
	if p.lastInline > 0 {
		return min(p.cfg.InlineAfter, p.lastInline)
	}
	return p.cfg.InlineAfter
}

// publishNow is Publish's clock: one clock read a message (pubClock)
// unless Config.Now was injected. Called with p.mu held.
func (p *Publisher) publishNow() time.Time {
	if p.fastNow {
		return p.clock.now()
	}
	return p.cfg.Now()
}

// inlineRun bounds the Publish calls in a row, each back within
// InlineAfter of the last, that still write themselves when their
// caller fell behind (Publisher.behind): a paced caller catches up a
// few messages inline; a longer run hands off from the next on.
const inlineRun = 4

// inlineGather bounds the datagrams a Publish call writes itself: its
// own, and repairs for the NACKs waiting. A longer backlog goes to the
// send goroutine, so that no caller is held writing it while it could
// be packing more.
const inlineGather = 4

// sendInline writes from the calling goroutine, sparing the hand-off to
// the send goroutine (and the wait for the scheduler to run it, even
// when it is awake): used when no write is in flight and the caller
// was away for at least InlineAfter since its last Publish returned, so
// that a paced message leaves at once and a tight loop still goes out
// in batches.
// The NACKs waiting are answered first (repairs go out before new
// data, as the engine orders them), then what is unsent, up to
// inlineGather datagrams; the send goroutine is woken for the rest.
// Called with p.mu held; returns with it released.
func (p *Publisher) sendInline(now time.Time, away time.Duration) {
	start := now
	if n, _ := p.take(now, inlineGather); n > 0 {
		now = p.put(n)
		p.lastInline = now.Sub(start)
		p.stats.InlineWrites++
	}
	p.behind = now.Sub(start) >= away
	p.lastCall = now
	// sendLoop calls the receipts' done.
	more := !p.eng.Idle() || p.inbox.pending() || p.rcpt.settled > 0
	wake := more && p.idle
	if more {
		p.idle = false
	}
	p.mu.Unlock()
	if wake {
		p.signal()
	}
}

// Flush waits until every message published so far has been handed to
// the kernel.
func (p *Publisher) Flush(ctx context.Context) error {
	if p.closed() {
		return transport.ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eng.Flush()
	for !p.eng.Idle() || p.writing {
		if p.closed() {
			return transport.ErrClosed
		}
		p.idle = false
		p.signal()
		p.flushers++
		err := p.waitProgress(ctx)
		p.flushers--
		if err != nil {
			return err
		}
	}
	return nil
}

// waitProgress waits, with p.mu held on entry and exit, until the
// sender goroutine has made progress.
func (p *Publisher) waitProgress(ctx context.Context) error {
	ch := p.progress
	p.waiters++
	p.mu.Unlock()
	p.signal()
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = ctx.Err()
	case <-p.stop:
		err = transport.ErrClosed
	}
	p.mu.Lock()
	p.waiters--
	return err
}

// madeProgress wakes waiters; p.mu is held.
func (p *Publisher) madeProgress() {
	if p.waiters > 0 {
		close(p.progress)
		p.progress = make(chan struct{})
	}
}

func (p *Publisher) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Publisher) closed() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// Close flushes, keeps answering NACKs until subscribers go quiet (at
// most CloseLinger), tells subscribers the stream ended, and stops.
// Messages Publish accepted that could not be sent within CloseLinger
// (flow control held them) are never sent: Close returns an
// *UnsentError naming them, and the END names them too, so subscribers
// report them as a Gap.
func (p *Publisher) Close() error {
	p.once.Do(func() { p.err = p.close() })
	return p.err
}

func (p *Publisher) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.CloseLinger)
	defer cancel()
	flushErr := p.Flush(ctx)
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.linger(ctx)

	p.mu.Lock()
	var unsent error
	if from, to, n := p.eng.Unsent(); n > 0 {
		// Flow control held them past CloseLinger: the END names
		// them, so subscribers report them as a Gap; so does Close.
		unsent = &UnsentError{From: from, To: to, Messages: n}
	}
	p.eng.Close()
	p.idle = false
	p.mu.Unlock()
	p.signal()
	endCtx, endCancel := context.WithTimeout(context.Background(), time.Second)
	defer endCancel()
	endErr := p.Flush(endCtx)
	if endErr != nil {
		endErr = fmt.Errorf("multicast: sending END: %w", endErr)
	}

	close(p.stop)
	err := p.conn.Close()
	p.wg.Wait()
	if p.send != nil {
		err = errors.Join(err, p.send.close())
	}
	if flushErr != nil && !errors.Is(flushErr, context.DeadlineExceeded) {
		err = errors.Join(flushErr, err)
	}
	return errors.Join(unsent, endErr, err)
}

// linger answers NACKs until none has come for CloseQuiet, or ctx ends.
func (p *Publisher) linger(ctx context.Context) {
	start := p.cfg.Now()
	t := time.NewTimer(p.cfg.CloseQuiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		last := p.lastNack
		p.mu.Unlock()
		if last.Before(start) {
			last = start
		}
		quietFor := p.cfg.Now().Sub(last)
		if quietFor >= p.cfg.CloseQuiet {
			return
		}
		t.Reset(p.cfg.CloseQuiet - quietFor)
	}
}
