package multicast

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// Subscriber joins a multicast group and delivers the streams it
// carries: messages in order, NACKing what it lost, and a Gap for what
// cannot be recovered.
//
// Whoever holds the reading role owns the group socket and the recovery
// engine: a Receive that finds nothing ready and nobody reading reads
// itself, and a reader goroutine reads while the application is away
// (subscriber_read.go); a second goroutine reads the unicast socket
// (unicast repairs) and passes what it gets to the holder. The reader
// goroutine hands events to Receive in batches. When the application
// falls behind by Queue batches it stops reading: the kernel buffer
// absorbs the burst, and what it drops is NACKed later or reported as a
// Gap.
type Subscriber struct {
	cfg  Config
	data *net.UDPConn // bound to the group's port, joined
	ctrl *net.UDPConn // unicast: NACKs out, unicast repairs in

	// Owned by the holder of the reading role (subscriber_read.go).
	rd       *reader
	appReads bool // the holder is the application, in Receive
	eng      *reliable.Receiver
	filter   DatagramFilter // nil without Config.Filter
	out      *batch         // batch being filled
	over     []*batch       // full batches, older than out, that found ready full while the application read for itself (handOverOwn)
	local    SubscriberStats

	inbox inbox // datagrams from the unicast socket

	arch *archiveSide // nil without an archive

	statsMu sync.Mutex
	stats   SubscriberStats // snapshot published by the reader

	ready chan *batch  // filled batches, in order
	free  *freeBatches // batches the application is done with
	cur   *batch       // batch being read by Receive
	next  int
	one   [1]transport.Event // ReceiveBatch's result from the archive path

	// The reading role (subscriber_read.go).
	rmu        sync.Mutex
	role       int             // roleBg (first), roleIdle, roleApp or roleClosed; under rmu
	appWaiting bool            // a Receive waits for the reader goroutine to give the role up; under rmu
	roleFree   chan struct{}   // the reader goroutine gave the role up to a waiting Receive
	idleCond   sync.Cond       // on rmu: the role went idle (Close waits for it)
	away       *time.Timer     // wakes the reader goroutine when the application stays away
	awayArmed  bool            // away is pending; under rmu
	kicked     chan struct{}   // wakes the reader goroutine: a unicast datagram came
	hooked     <-chan struct{} // Done of the context whose end wakes reads (hook)
	// woken is set by a wake-up (wakeRead) before it moves the read
	// deadline to now; step, having set its own deadline, takes it and
	// sets now again, so that a wake-up its deadline overwrote is not
	// lost (a Receive whose context ended while step set the deadline
	// slept in the read until a datagram came: for good on a quiet feed).
	woken  atomic.Bool
	unhook func() bool // undoes that registration

	stop chan struct{}
	shut atomic.Bool // set as Close begins, before stop closes
	wg   sync.WaitGroup
	once sync.Once
}

var (
	_ transport.Subscriber      = (*Subscriber)(nil)
	_ transport.BatchSubscriber = (*Subscriber)(nil)
)

// NewSubscriber joins cfg.Group on cfg.Interface and starts reading.
// Streams that start from now on are delivered from their first message.
func NewSubscriber(ctx context.Context, cfg Config) (*Subscriber, error) {
	ifi, addr, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	rcfg := cfg.Receiver
	rcfg.Rand = cfg.Rand
	if cfg.Key != nil {
		rcfg.Key = cfg.Key
	}
	if rcfg.ListenSince.IsZero() {
		rcfg.ListenSince = cfg.Now()
	}
	if rcfg.Feeds == nil {
		rcfg.Feeds = []uint32{cfg.Feed}
	}
	if cfg.Archive.Join.History() {
		rcfg.Join = reliable.JoinLive // the archive gives what came before
	}
	if rcfg.StatusWindow == 0 {
		// Validated by the engine below, before any socket opens; the
		// window is set from the buffer the kernel grants.
		rcfg.StatusWindow = reliable.DefaultStatusWindow
	}
	eng, err := reliable.NewReceiver(rcfg)
	if err != nil {
		return nil, engineConfigError(err, "Receiver.")
	}
	s := &Subscriber{
		cfg:      cfg,
		eng:      eng,
		inbox:    newInbox(256),
		ready:    make(chan *batch, cfg.Queue),
		free:     newFreeBatches(cfg.Queue + 1),
		roleFree: make(chan struct{}, 1),
		kicked:   make(chan struct{}, 1),
		away:     time.NewTimer(time.Hour),
		stop:     make(chan struct{}),
	}
	s.idleCond.L = &s.rmu
	if cfg.Filter != nil {
		if s.filter, err = cfg.Filter(); err != nil {
			return nil, fmt.Errorf("multicast: datagram filter: %w", err)
		}
	}
	if cfg.Archive.enabled() {
		if s.arch, err = openArchive(ctx, &cfg); err != nil {
			return nil, err
		}
	}
	for i := 0; i < cfg.Queue; i++ {
		s.free.put(newBatch())
	}
	s.out = newBatch()
	if s.data, err = listenUDP(ctx, cfg.Group, reuseAddr); err != nil {
		s.closeArchive()
		return nil, err
	}
	if err := join(s.data, ifi, cfg.Group.Addr()); err != nil {
		s.data.Close()
		s.closeArchive()
		return nil, err
	}
	s.local.RecvBuffer, _ = bufferSizes(s.data, cfg.RecvBuffer, 0, cfg.Logger)
	s.local.GRO = !cfg.NoOffload && enableGRO(s.data)
	s.stats = s.local
	if cfg.Receiver.StatusWindow == 0 && s.local.RecvBuffer > 0 {
		// What a publisher with flow control may send ahead of us: half
		// the receive buffer, the kernel charging each datagram its
		// bookkeeping too.
		rcfg.StatusWindow = min(s.local.RecvBuffer/2, 1<<32-1)
		if s.eng, err = reliable.NewReceiver(rcfg); err != nil {
			s.data.Close()
			s.closeArchive()
			return nil, engineConfigError(err, "Receiver.")
		}
	}
	if s.ctrl, err = listenUDP(ctx, netip.AddrPortFrom(addr, 0), nil); err != nil {
		s.data.Close()
		s.closeArchive()
		return nil, err
	}
	if s.rd, err = s.newReader(); err != nil {
		s.data.Close()
		s.ctrl.Close()
		s.closeArchive()
		return nil, err
	}
	s.wg.Add(2)
	go s.readLoop()
	go s.controlLoop()
	return s, nil
}

// Semantics: ordered, deduplicated, recovered within the publisher's
// retransmit window, gaps reported.
func (s *Subscriber) Semantics() transport.Semantics { return semantics }

// Stats returns a snapshot of the counters, at most a read old.
func (s *Subscriber) Stats() SubscriberStats {
	s.statsMu.Lock()
	st := s.stats
	s.statsMu.Unlock()
	if s.arch != nil {
		st.Archive = s.arch.stats()
	}
	return st
}

// Receive returns the next event. Its slices stay valid until the next
// call.
func (s *Subscriber) Receive(ctx context.Context) (transport.Event, error) {
	if s.arch != nil {
		return s.receiveArchived(ctx)
	}
	for {
		if s.closed() {
			return transport.Event{}, transport.ErrClosed
		}
		if s.cur != nil && s.next < len(s.cur.events) {
			s.next++
			return s.cur.events[s.next-1], nil
		}
		if err := s.refill(ctx); err != nil {
			return transport.Event{}, err
		}
	}
}

// ReceiveBatch is Receive for many events at once, for a caller that
// handles events in a loop (transport.BatchSubscriber: a pipe finds it by
// type assertion): it blocks as Receive does until an event is ready, then
// returns the events ready, at least one and at most maxEvents (below 1
// counts as 1), in the order Receive would return them. It spares a copy of
// each event and the checks of a Receive call per event.
//
// The events and the slices they point to stay valid until the next call
// to Receive or ReceiveBatch; the caller must not modify them. It returns
// the errors Receive returns, and no events with them. Receive and
// ReceiveBatch may be mixed, from one goroutine, as Receive is called.
func (s *Subscriber) ReceiveBatch(ctx context.Context, maxEvents int) ([]transport.Event, error) {
	if s.arch != nil {
		ev, err := s.receiveArchived(ctx)
		if err != nil {
			return nil, err
		}
		s.one[0] = ev
		return s.one[:], nil
	}
	for {
		if s.closed() {
			return nil, transport.ErrClosed
		}
		if s.cur != nil && s.next < len(s.cur.events) {
			from := s.next
			s.next += min(len(s.cur.events)-from, max(maxEvents, 1))
			return s.cur.events[from:s.next:s.next], nil
		}
		if err := s.refill(ctx); err != nil {
			return nil, err
		}
	}
}

// closed reports whether Close has begun: an atomic load, cheaper than
// polling s.stop, as Receive asks once per event.
func (s *Subscriber) closed() bool { return s.shut.Load() }

// Close leaves the group and stops the readers. It first tells each
// stream's publisher that it leaves (a leaving STATUS, reliable.Status),
// so that one with flow control stops waiting for it at once instead of
// after its ReceiverTimeout; a publisher that predates that ignores it.
func (s *Subscriber) Close() error {
	var err error
	s.once.Do(func() {
		s.shut.Store(true)
		close(s.stop)
		s.data.Close()
		// The unicast socket stays open for the leaving STATUS: its
		// reader ends at the deadline, seeing shut.
		_ = s.ctrl.SetReadDeadline(time.Now())
		s.wg.Wait()
		s.leave()
		s.ctrl.Close()
		s.away.Stop()
		err = s.closeArchive()
	})
	return err
}

// leave takes the reading role for good, once its holder has seen the
// group socket closed (the reader goroutine has ended; a Receive reading
// for itself gives the role up), and sends each stream's publisher a
// leaving STATUS, so that one with flow control stops waiting for this
// subscriber at once instead of after its ReceiverTimeout.
func (s *Subscriber) leave() {
	s.rmu.Lock()
	for s.role == roleApp {
		s.idleCond.Wait()
	}
	s.role = roleClosed
	s.rmu.Unlock()
	s.eng.Leave(s.cfg.Now(), (*handler)(s))
}

func (s *Subscriber) closeArchive() error {
	if s.arch == nil {
		return nil
	}
	return s.arch.close()
}
