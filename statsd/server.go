package statsd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a StatsD server: listeners feeding one Aggregator, flushed
// to the backends every FlushInterval.
type Server struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex // guards agg, lastLog, packets and lines
	agg     *Aggregator
	lastLog time.Time
	// received counts packets and lines (sequence lines included) since
	// the start; arrived is signalled at each change.
	received [2]uint64
	arrived  *sync.Cond

	udp     []*udpReader
	tcp     []*tcpListener
	unix    []*unixReader
	packets []PacketBackend
	drops   dropReader

	counters listenCounters
	// flushMu serializes flushes; lastFlush is the previous one's
	// duration.
	flushMu   sync.Mutex
	lastFlush time.Duration
	backErrs  map[string]uint64

	wg      sync.WaitGroup
	closed  atomic.Bool
	stopped chan struct{}
	// quit is closed when Close begins: a listener's pause between
	// failed reads ends then.
	quit chan struct{}
	// pause waits between a listener's failed reads (sleep; tests
	// record the pauses instead).
	pause func(time.Duration)
}

// listenCounters are the listeners' counters since the last flush.
type listenCounters struct {
	truncated, tooLong, readErrors, evictedConns, idleConns atomic.Uint64
	// datagrams counts the UDP datagrams read since the start.
	datagrams atomic.Uint64
}

// NewServer opens the listeners and starts reading; metrics are
// aggregated from then on. Serve flushes them.
func NewServer(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	agg, err := NewAggregator(cfg.AggregatorConfig)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, agg: agg, backErrs: make(map[string]uint64),
		stopped: make(chan struct{}), quit: make(chan struct{})}
	s.pause = s.sleep
	s.arrived = sync.NewCond(&s.mu)
	for _, b := range cfg.Backends {
		if pb, ok := b.(PacketBackend); ok {
			s.packets = append(s.packets, pb)
		}
	}
	if err := s.listen(ctx); err != nil {
		s.closeListeners()
		return nil, err
	}
	for _, r := range s.udp {
		s.wg.Add(2)
		go r.run(s)
		go r.parse(s)
	}
	for _, l := range s.tcp {
		s.wg.Add(1)
		go l.run(s)
	}
	for _, r := range s.unix {
		s.wg.Add(1)
		go r.run(s)
	}
	return s, nil
}

func (s *Server) listen(ctx context.Context) error {
	ours := make(map[uint64]bool)
	for _, addr := range s.cfg.UDP {
		rs, err := listenUDP(ctx, addr, &s.cfg, ours)
		if err != nil {
			return err
		}
		s.udp = append(s.udp, rs...)
		for _, r := range rs {
			s.drops.add(r.inode)
		}
	}
	for _, addr := range s.cfg.TCP {
		l, err := listenTCP(ctx, addr, &s.cfg)
		if err != nil {
			return err
		}
		s.tcp = append(s.tcp, l)
	}
	for _, path := range s.cfg.Unixgram {
		r, err := listenUnixgram(path, &s.cfg)
		if err != nil {
			return err
		}
		s.unix = append(s.unix, r)
	}
	return nil
}

// UDPAddrs, TCPAddrs and UnixgramPaths say where the server listens,
// with the ports the system chose.
func (s *Server) UDPAddrs() []net.Addr {
	var out []net.Addr
	for i, r := range s.udp {
		if i%s.cfg.UDPReaders == 0 {
			out = append(out, r.conn.LocalAddr())
		}
	}
	return out
}

func (s *Server) TCPAddrs() []net.Addr {
	var out []net.Addr
	for _, l := range s.tcp {
		out = append(out, l.ln.Addr())
	}
	return out
}

func (s *Server) UnixgramPaths() []string { return s.cfg.Unixgram }

// Config returns the configuration in force, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// ingest hands a parsed batch to the aggregator and logs its first bad
// line when the last log is old enough.
func (s *Server) ingest(b *batch) {
	if b.empty() && len(b.metrics) == 0 {
		return
	}
	s.mu.Lock()
	s.ingestUnlock(b)
}

// ingestUnlock is ingest once s.mu is held: it applies b, unlocks, and
// logs b's first bad line when the last log is old enough.
func (s *Server) ingestUnlock(b *batch) {
	var logBad bool
	if b.bad > 0 {
		if now := s.cfg.Now(); now.Sub(s.lastLog) >= s.cfg.BadLineLogGap {
			s.lastLog, logBad = now, true
		}
	}
	s.received[0] += uint64(b.packets)
	s.received[1] += uint64(b.lines + b.seq) // events and checks are in lines
	b.applyTo(s.agg)
	s.arrived.Broadcast()
	s.mu.Unlock()
	if logBad {
		s.log.Warn("statsd: bad line (more are counted, not logged, for a while)",
			"line", quoteLine(string(b.badLine)), "reason", b.badWhy.String())
	}
}

// Received returns the packets and the lines (sequence lines, DogStatsD
// events and service checks included) received since the server
// started.
func (s *Server) Received() (packets, lines uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received[0], s.received[1]
}

// WaitReceived waits until the server has received at least packets
// packets and lines lines since it started, or ctx ends.
func (s *Server) WaitReceived(ctx context.Context, packets, lines uint64) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.arrived.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.received[0] < packets || s.received[1] < lines {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("statsd: received %d packets and %d lines, waited for %d and %d: %w",
				s.received[0], s.received[1], packets, lines, err)
		}
		s.arrived.Wait()
	}
	return nil
}

// repeat gives a packet to the packet backends.
func (s *Server) repeat(p []byte) {
	for _, b := range s.packets {
		b.Packet(p)
	}
}

// Serve flushes every FlushInterval, on the multiples of the interval
// since the Unix epoch (as Etsy's grid from its start second), until
// ctx ends; then it closes the listeners, makes a final flush, closes
// the backends and returns nil. It returns ErrClosed if the server was
// already closed.
//
// The backends of a flush have until the next flush at most (and
// BackendTimeout), so a slow backend never delays or skips a flush: the
// rates divide by FlushInterval, as Etsy's do, and would be too high
// over a longer interval.
func (s *Server) Serve(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	interval := s.cfg.FlushInterval
	tick := func(now time.Time) time.Time {
		return time.UnixMilli((now.UnixMilli()/interval.Milliseconds() + 1) * interval.Milliseconds())
	}
	next := tick(s.cfg.Now())
	for {
		t := time.NewTimer(next.Sub(s.cfg.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return s.Close()
		case <-t.C:
			after := next.Add(interval)
			fctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), after)
			s.Flush(fctx)
			cancel()
			next = after
			// A flush that ended a whole interval late (a backend
			// that ignores its context) leaves the grid's next tick.
			if now := s.cfg.Now(); now.Sub(next) >= interval {
				next = tick(now)
			}
		}
	}
}

// Flush flushes now: it computes the snapshot, hands it to every
// backend at once (each with ctx, bounded by BackendTimeout), waits for
// them and returns it.
func (s *Server) Flush(ctx context.Context) *Snapshot {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	start := s.cfg.Now()
	s.mu.Lock()
	snap := s.agg.Flush(start)
	s.mu.Unlock()
	snap.Server.ProcessingTime = s.cfg.Now().Sub(start)
	snap.Server.LastFlushDuration = s.lastFlush
	snap.Server.Listen = s.listenStats()
	snap.Server.BackendErrors = s.backErrs
	snap.Server.BackendLinesLost = s.linesLost()
	s.backErrs = make(map[string]uint64)
	// Each backend in its goroutine, so that a slow one (a logd or a
	// Carbon down) does not hold the others back.
	errs := make([]error, len(s.cfg.Backends))
	var wg sync.WaitGroup
	for i, b := range s.cfg.Backends {
		wg.Go(func() {
			bctx, cancel := context.WithTimeout(ctx, s.cfg.BackendTimeout)
			defer cancel()
			errs[i] = b.Flush(bctx, snap)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			name := s.cfg.Backends[i].Name()
			s.backErrs[name]++
			s.log.Warn("statsd: backend flush failed", "backend", name, "err", err)
		}
	}
	s.lastFlush = s.cfg.Now().Sub(start)
	return snap
}

// linesLost reads the lines the backends lost since the last flush.
func (s *Server) linesLost() map[string]uint64 {
	var m map[string]uint64
	for _, b := range s.cfg.Backends {
		if l, ok := b.(lineLoser); ok {
			if m == nil {
				m = make(map[string]uint64)
			}
			m[b.Name()] += l.linesLost()
		}
	}
	return m
}

func (s *Server) listenStats() ListenStats {
	st := ListenStats{
		KernelDrops:  s.drops.delta(),
		Truncated:    s.counters.truncated.Swap(0),
		LinesTooLong: s.counters.tooLong.Swap(0),
		ReadErrors:   s.counters.readErrors.Swap(0),
		EvictedConns: s.counters.evictedConns.Swap(0),
		IdleConns:    s.counters.idleConns.Swap(0),
	}
	for _, b := range s.cfg.Backends {
		if r, ok := b.(*Repeater); ok {
			sent, dropped := r.counts()
			st.Repeated += sent
			st.RepeatDropped += dropped
		}
	}
	return st
}

// Close stops the listeners, waits for the readers, makes a final flush
// and closes the backends. Later calls return ErrClosed.
func (s *Server) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	close(s.quit)
	// The sockets' drop counters, before the sockets close and leave
	// /proc/net/udp: the final flush reports them.
	s.drops.hold()
	s.closeListeners()
	s.wg.Wait()
	s.Flush(context.Background())
	var errs []error
	for _, b := range s.cfg.Backends {
		if c, ok := b.(Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("statsd: close backend %s: %w", b.Name(), err))
			}
		}
	}
	close(s.stopped)
	return errors.Join(errs...)
}

func (s *Server) closeListeners() {
	for _, r := range s.udp {
		r.conn.Close()
	}
	for _, l := range s.tcp {
		l.close()
	}
	for _, r := range s.unix {
		r.close()
	}
}
