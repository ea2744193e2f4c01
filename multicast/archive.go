package multicast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/archive"
)

// archiveRetry is how long the archive's reader waits before it tries
// again a read that failed.
const archiveRetry = 100 * time.Millisecond

// archiveInFlight is how many reads of the archive its reader hands on
// ahead of the merger.
const archiveInFlight = 4

// archiveFirstRead is the room for events of a read of the archive
// before the reader has read any.
const archiveFirstRead = 2048

// archiveSide is a Subscriber's archive: the log, the goroutine that
// reads it when the merger asks, and the merger, which runs on the
// goroutine that calls Receive.
type archiveSide struct {
	cfg    ArchiveConfig
	log    transport.Log
	reader *archive.Reader
	logger *slog.Logger

	mu sync.Mutex // guards m for Stats
	m  *merger

	// waitN is the merger's wait for a live event (merger.awaiting)
	// that Receive saw begin, at waitAt: it ends it Wait after.
	waitN  uint64
	waitAt time.Time

	// batches are the reads of the archive in flight, archiveInFlight
	// at most: with the log's bound on one read
	// (kafka.Config.LogFetchBytes), what a replay holds besides the live
	// events (ArchiveConfig.BufferBytes).
	batches chan archiveBatch
	// free holds the events slices of batches merged, for the reader
	// to read into again: a replay allocates no events per record. What
	// they still point to (records of the log already delivered) is
	// bounded by their number.
	free chan []transport.Event

	// rmu guards the reader goroutine's handles: apply (on the Receive
	// goroutine) starts and stops it, close (on Close's) stops it for
	// good, possibly at the same time.
	rmu    sync.Mutex
	cancel context.CancelFunc // stops the reader goroutine running
	done   chan struct{}      // closed when it returned
	closed bool               // close was called: no reader starts
}

// openArchive connects the subscriber's archive.
func openArchive(ctx context.Context, cfg *Config) (*archiveSide, error) {
	var (
		log transport.Log
		err error
	)
	if cfg.Archive.Open != nil {
		log, err = cfg.Archive.Open(ctx)
	} else {
		log, err = openLog(ctx, cfg.Archive.URL, cfg.Logger)
	}
	if err != nil {
		return nil, fmt.Errorf("multicast: archive %s: %w", cfg.Archive.URL, err)
	}
	return newArchiveSide(cfg, log), nil
}

// newArchiveSide is the archive side of a subscriber reading log; a
// reader starts at once for a history (cfg.Archive.Join).
func newArchiveSide(cfg *Config, log transport.Log) *archiveSide {
	a := &archiveSide{cfg: cfg.Archive, log: log, logger: cfg.Logger, batches: make(chan archiveBatch, archiveInFlight), free: make(chan []transport.Event, archiveInFlight+2)}
	a.reader = archive.NewReader(log, cfg.Feed)
	a.m = newMerger(cfg.Feed, &cfg.Archive, cfg.Logger)
	a.apply()
	return a
}

// openLog opens a log URL whose endpoint can read at positions, logging
// to logger (the subscriber's: a broker it cannot reach says so there).
func openLog(ctx context.Context, raw string, logger *slog.Logger) (transport.Log, error) {
	lr, err := logReader(ctx, raw, transport.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	return lr.OpenLog(ctx)
}

// logReader opens raw as a transport URL whose endpoint is a
// transport.LogReader.
func logReader(ctx context.Context, raw string, opts ...transport.Option) (transport.LogReader, error) {
	ep, err := transport.Open(ctx, raw, opts...)
	if err != nil {
		return nil, err
	}
	lr, ok := ep.(transport.LogReader)
	if !ok {
		return nil, fmt.Errorf("%w: %s cannot be read at positions: an archive is a log (logd://HOST:PORT/TOPIC)", transport.ErrBadURL, raw)
	}
	return lr, nil
}

// apply carries out the merger's orders: stop the reader, start one.
// Called on the Receive goroutine; once the archive is closed it starts
// none.
func (a *archiveSide) apply() {
	for {
		c, ok := a.m.takeCommand()
		if !ok {
			return
		}
		a.rmu.Lock()
		a.stopReader()
		if !c.stop && !a.closed {
			ctx, cancel := context.WithCancel(context.Background())
			a.cancel, a.done = cancel, make(chan struct{})
			go a.read(ctx, c, a.done)
		}
		a.rmu.Unlock()
	}
}

// stopReader stops the reader goroutine, if one runs, and drops what it
// sent. The caller holds rmu.
func (a *archiveSide) stopReader() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	<-a.done
	a.cancel = nil
	for {
		select {
		case <-a.batches:
		default:
			return
		}
	}
}

// read is the reader goroutine of one replay: it finds where to start,
// then reads on, handing the merger what it reads, and word when the
// archive gives nothing of the feed for Wait (idle), until ctx ends.
//
// Wait is measured on the clock of the deadlines that bound the reads
// (time.Now), not on Config.Now: an injected clock cannot make a read
// of the log return sooner, nor one that stands still make it wait on.
func (a *archiveSide) read(ctx context.Context, c replayCmd, done chan<- struct{}) {
	defer close(done)
	want, err := a.seek(ctx, c)
	if err != nil {
		return // ctx ended
	}
	b := archiveBatch{gen: c.gen, seeked: true, want: want, trimmed: a.reader.Trimmed()}
	if _, ok := c.start.Time(); ok {
		b.prior, b.priorEnd = a.previous(ctx)
	}
	last := time.Now()
	var buf []transport.Event
	most := 0 // the most events a read gave: a new slice's size
	for {
		if buf == nil {
			select {
			case buf = <-a.free:
			default:
				// Room for a read a quarter larger than the largest,
				// and for a first read of a kafka.Log (about 1024
				// records and a batch): the reader grows a slice that
				// fills by copying it.
				buf = make([]transport.Event, 0, max(most+most/4, archiveFirstRead))
			}
		}
		rctx, cancel := context.WithDeadline(ctx, last.Add(a.cfg.Wait))
		evs, err := a.reader.Append(rctx, buf[:0])
		cancel()
		if ctx.Err() != nil {
			return
		}
		b.events, most = evs, max(most, len(evs))
		b.deleted = b.deleted || a.reader.Deleted()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			// A failed read is tried again: the archive is given up on
			// (idle, with the error) only when it has given nothing for
			// Wait, as when it has nothing.
			b.err = err
		}
		switch now := time.Now(); {
		case err == nil && len(evs) > 0:
			last = now
		case now.Sub(last) >= a.cfg.Wait:
			b.idle, last = true, now
			if b.err == nil && errors.Is(err, context.DeadlineExceeded) {
				// Nothing for Wait: the archive holds nothing more, or
				// its reads hang. A hang is given up on as a failure.
				b.err = a.stalled(ctx)
			}
		}
		if b.idle && b.err != nil {
			// The merger gives the archive up on this batch: what it
			// lacks is reported with the engine's reason, which alone
			// would look like any loss. Say why, as seek does.
			a.logger.Warn("multicast: reading the archive", "archive", a.cfg.URL, "err", b.err)
		}
		failed := b.err != nil
		if len(b.events) > 0 || b.idle || b.seeked || failed {
			if !a.send(ctx, b) {
				return
			}
			if len(b.events) > 0 {
				// Wait is the archive's silence: the time the merger
				// took to take the batch (an application slower than
				// the archive) is not.
				last = time.Now()
			}
			buf = nil // the merger's now
			b = archiveBatch{gen: c.gen}
		} else {
			buf = evs
			b = archiveBatch{gen: c.gen, deleted: b.deleted} // for the next records of the feed
		}
		if failed && !pause(ctx, archiveRetry) {
			return
		}
	}
}

// stalled tells, after reads that timed out with nothing of the feed
// for Wait, whether they hung: the log holds records past the reader's
// position that no read returned, or its bounds cannot be had either
// (an error wrapping ErrArchiveTimeout). nil: the reader is at the
// log's end, and nothing more was recorded. The question is bounded by
// Wait too.
//
// A log whose only records past the reader are a transaction's markers
// (which a read skips, waiting for the next record) looks hung as well.
func (a *archiveSide) stalled(ctx context.Context) error {
	bctx, cancel := context.WithTimeout(ctx, a.cfg.Wait)
	defer cancel()
	pos := a.reader.Position()
	_, next, err := a.log.Bounds(bctx, a.reader.Stream())
	switch {
	case ctx.Err() != nil:
		return nil // the replay is over: nothing to report
	case err != nil:
		return fmt.Errorf("%w: nothing came for %v from log position %d, and the log's bounds could not be read: %w", ErrArchiveTimeout, a.cfg.Wait, pos, err)
	case next > pos:
		return fmt.Errorf("%w: nothing came for %v from log position %d, though the log holds records up to %d", ErrArchiveTimeout, a.cfg.Wait, pos, next-1)
	}
	return nil
}

// seek positions the reader for c, trying again (and telling the
// merger the archive is idle: at once when it holds nothing, after Wait
// when it cannot be read) until it can. Each try is bounded by Wait: a
// log that does not answer (or a read of a position that holds only a
// transaction marker, which waits for the next record) counts as one
// that cannot be read. It returns the position it looked for, and an
// error only when ctx ended.
func (a *archiveSide) seek(ctx context.Context, c replayCmd) (archive.Pos, error) {
	since := time.Now()
	for {
		start := c.start
		err := func() error {
			ctx, cancel := context.WithTimeout(ctx, a.cfg.Wait)
			defer cancel()
			if c.seq == 0 {
				return a.reader.Seek(ctx, start)
			}
			last, ok, err := a.reader.Last(ctx)
			switch {
			case err != nil:
				return err
			case !ok:
				return archive.ErrEmpty
			}
			start = archive.At(archive.Pos{Session: last.Session, Seq: c.seq})
			return a.reader.Seek(ctx, start)
		}()
		if err == nil {
			want, _ := start.Pos()
			return want, nil
		}
		if ctx.Err() != nil {
			return archive.Pos{}, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: finding where to start (%v) took more than %v: %w", ErrArchiveTimeout, start, a.cfg.Wait, err)
		}
		if !errors.Is(err, archive.ErrEmpty) && time.Since(since) < a.cfg.Wait {
			// A failed read is tried again, for Wait, before the
			// archive is given up on; the merger counts it.
			if !a.send(ctx, archiveBatch{gen: c.gen, err: err}) || !pause(ctx, archiveRetry) {
				return archive.Pos{}, ctx.Err()
			}
			continue
		}
		b := archiveBatch{gen: c.gen, idle: true}
		if !errors.Is(err, archive.ErrEmpty) {
			b.err = err
			a.logger.Warn("multicast: reading the archive", "archive", a.cfg.URL, "err", err)
		}
		if !a.send(ctx, b) || !pause(ctx, a.cfg.Wait) {
			return archive.Pos{}, ctx.Err()
		}
		since = time.Now()
	}
}

// previous is the feed's last record before where the reader's Seek
// to a time landed (archive.Reader.Previous), and whether it is an end
// marker: zero when there is none, or it could not be read within Wait,
// which the merger takes as knowing nothing of the feed before the time.
func (a *archiveSide) previous(ctx context.Context) (archive.Pos, bool) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Wait)
	defer cancel()
	p, end, ok, err := a.reader.Previous(ctx)
	if err != nil || !ok {
		return archive.Pos{}, false
	}
	return p, end
}

// send hands b to the merger; false when ctx ended first.
func (a *archiveSide) send(ctx context.Context, b archiveBatch) bool {
	select {
	case a.batches <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// pause waits d, or until ctx ends (false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// live hands the merger an event of the engine (see merger.live).
func (a *archiveSide) live(ev *transport.Event) bool {
	a.mu.Lock()
	pass := a.m.live(ev)
	a.mu.Unlock()
	a.apply()
	return pass
}

// take hands the merger a batch of the reader.
func (a *archiveSide) take(b *archiveBatch) {
	a.mu.Lock()
	a.m.archive(b)
	spent := a.m.takeSpent()
	a.mu.Unlock()
	a.recycle(spent)
	a.apply()
}

// pop returns the merger's next event for the application.
func (a *archiveSide) pop() (transport.Event, bool) {
	var ev transport.Event
	ok := a.popInto(&ev)
	return ev, ok
}

// popInto sets *dst to the merger's next event for the application, if
// there is one. The event is copied before the batch it came from goes
// back to the reader.
func (a *archiveSide) popInto(dst *transport.Event) bool {
	a.mu.Lock()
	ok := a.m.popInto(dst)
	spent := a.m.takeSpent()
	a.mu.Unlock()
	a.recycle(spent)
	a.apply()
	return ok
}

// recycle gives the reader back the events slice of a batch merged.
func (a *archiveSide) recycle(evs []transport.Event) {
	if cap(evs) == 0 {
		return
	}
	select {
	case a.free <- evs[:0]:
	default:
	}
}

// awaiting returns, when the merger waits for a live event before the
// replay goes on (merger.awaiting), when that wait is over: Wait after
// Receive saw it begin, on the clock of the reader's deadlines.
func (a *archiveSide) awaiting() (time.Time, bool) {
	a.mu.Lock()
	on, n := a.m.awaiting, a.m.waits
	a.mu.Unlock()
	if !on {
		return time.Time{}, false
	}
	if n != a.waitN {
		a.waitN, a.waitAt = n, time.Now()
	}
	return a.waitAt.Add(a.cfg.Wait), true
}

// awaitOver tells the merger its wait for a live event lasted Wait.
func (a *archiveSide) awaitOver() {
	a.mu.Lock()
	a.m.awaitOver()
	a.mu.Unlock()
	a.apply()
}

// stats returns the merger's and the reader's counters.
func (a *archiveSide) stats() ArchiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m.Stats()
}

// close stops the reader and closes the log. A Receive running at the
// same time starts no reader after it.
func (a *archiveSide) close() error {
	a.rmu.Lock()
	a.closed = true
	a.stopReader()
	a.rmu.Unlock()
	return a.log.Close()
}

// receiveArchived is Receive with an archive: the engine's events pass
// through the merger, which adds the archive's where they fall short.
func (s *Subscriber) receiveArchived(ctx context.Context) (ev transport.Event, err error) {
	a := s.arch
	for {
		if s.closed() {
			return transport.Event{}, transport.ErrClosed
		}
		if a.popInto(&ev) {
			return ev, nil
		}
		if s.cur != nil {
			if s.next < len(s.cur.events) {
				live := &s.cur.events[s.next]
				s.next++
				if a.live(live) {
					return *live, nil
				}
				continue
			}
			s.recycle(s.cur)
			s.cur = nil
		}
		// While the merger waits for a live event, the reader's
		// batches wait too, for Wait at most.
		batches := a.batches
		until, waiting := a.awaiting()
		if waiting {
			batches = nil
		}
		select {
		case b := <-batches:
			a.take(&b)
			continue
		case s.cur = <-s.ready:
			s.next = 0
			continue
		default:
		}
		if err := ctx.Err(); err != nil {
			return transport.Event{}, err
		}
		var (
			timer *time.Timer
			over  <-chan time.Time
		)
		if waiting {
			timer = time.NewTimer(time.Until(until))
			over = timer.C
		}
		select {
		case b := <-batches:
			a.take(&b)
		case s.cur = <-s.ready:
			s.next = 0
		case <-over:
			a.awaitOver()
		case <-ctx.Done():
			return transport.Event{}, ctx.Err()
		case <-s.stop:
			return transport.Event{}, transport.ErrClosed
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
