package statsd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/brokerless/brokerless/transport"
)

// Log writes each flush to a log (a logd or Kafka topic, through a
// transport.Publisher such as transport/kafka's) as JSON lines: one
// record a metric, the line the console backend prints (without its
// newline), keyed by the metric's key and stamped with the flush's time.
// Any Kafka client reads the flushes back, and a compacted topic keeps
// each metric's last flush.
//
// Flush returns once the log has acknowledged every line of the flush
// (each line's receipt, transport.ReceiptPublisher), so a failed or slow
// log counts as the backend's error (ServerStats.BackendErrors) within
// the flush's deadline. The lines of a flush that gave up waiting stay
// in the publisher's bounded buffer, which keeps sending them, so they
// may reach the log later, before the next flush's; each line's outcome
// belongs to its own flush, so a late failure never fails a later flush.
// The lines that never reach the log — not taken by the publisher
// before the deadline (its buffer full while the log is down), or failed
// by it, also after their flush gave up — are counted in
// ServerStats.BackendLinesLost.
type Log struct {
	cfg LogConfig
	pub transport.ReceiptPublisher
	mu  sync.Mutex
	buf []byte
	// lost counts the lines lost since the server last read it.
	lost atomic.Uint64
}

// LogConfig configures the log backend.
type LogConfig struct {
	// Publisher writes the records (required); Close closes it. It must
	// be a transport.ReceiptPublisher (transport/kafka's is), so that
	// each line's outcome is known.
	Publisher transport.Publisher
	// Name names the backend in logs and self-metrics (default "log").
	Name string
	// Self adds the server's own metrics, as ConsoleConfig.Self does.
	Self bool
}

// NewLog returns a backend writing to cfg.Publisher.
func NewLog(cfg LogConfig) (*Log, error) {
	if cfg.Publisher == nil {
		return nil, badConfig("Log.Publisher", nil, "is required")
	}
	pub, ok := cfg.Publisher.(transport.ReceiptPublisher)
	if !ok {
		return nil, badConfig("Log.Publisher", fmt.Sprintf("%T", cfg.Publisher), "must be a transport.ReceiptPublisher (report each record's outcome)")
	}
	if cfg.Name == "" {
		cfg.Name = "log"
	}
	return &Log{cfg: cfg, pub: pub}, nil
}

// Name is LogConfig.Name.
func (l *Log) Name() string { return l.cfg.Name }

// Flush publishes the snapshot's lines and waits until the log has them
// or ctx ends.
func (l *Log) Flush(ctx context.Context, s *Snapshot) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := &logFlush{log: l, pending: 1, done: make(chan struct{})}
	var lines, unpublished int
	var perr error
	b, _ := appendJSONLines(l.buf[:0], s, l.cfg.Self, func(key string, line []byte) error {
		lines++
		if perr != nil {
			unpublished++
			return nil
		}
		f.add()
		if perr = l.pub.PublishReceipt(ctx, transport.Message{Time: s.Time, Key: []byte(key), Payload: line}, f.receipt); perr != nil {
			f.receipt(transport.Receipt{}, nil) // never published: no receipt
			unpublished++
		}
		return nil
	})
	l.buf = b
	l.lost.Add(uint64(unpublished))
	f.receipt(transport.Receipt{}, nil) // publishing is over
	if perr != nil {
		return fmt.Errorf("statsd: writing a flush of %d lines to the log: %d not published: %w", lines, unpublished, perr)
	}
	select {
	case <-f.done:
		if err := f.failure(); err != nil {
			return fmt.Errorf("statsd: writing a flush of %d lines to the log: %w", lines, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("statsd: writing a flush of %d lines to the log: not acknowledged: %w", lines, ctx.Err())
	}
}

// logFlush awaits the receipts of one flush's lines.
type logFlush struct {
	log *Log
	mu  sync.Mutex
	// pending counts the receipts awaited, plus one while publishing.
	pending int
	err     error // the first line's failure
	done    chan struct{}
}

func (f *logFlush) add() {
	f.mu.Lock()
	f.pending++
	f.mu.Unlock()
}

// receipt is the done of each line's PublishReceipt: a failed line is
// lost, whether or not its flush still waits.
func (f *logFlush) receipt(_ transport.Receipt, err error) {
	if err != nil {
		f.log.lost.Add(1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil && f.err == nil {
		f.err = err
	}
	if f.pending--; f.pending == 0 {
		close(f.done)
	}
}

func (f *logFlush) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// linesLost returns the lines lost since the last call.
func (l *Log) linesLost() uint64 { return l.lost.Swap(0) }

// Close closes the publisher, after the server's final flush.
func (l *Log) Close() error {
	if err := l.cfg.Publisher.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		return err
	}
	return nil
}
