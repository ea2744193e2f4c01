package statsd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/brokerless/brokerless/transport"
)

// Log writes each flush to a log (a logd or Kafka topic, through a
// transport.Publisher such as transport/kafka's) as JSON lines: one
// record a metric, the line the console backend prints (without its
// newline), keyed by the metric's key and stamped with the flush's time.
// Any Kafka client reads the flushes back, and a compacted topic keeps
// each metric's last flush.
//
// Flush returns once the log has accepted every line of the flush (the
// publisher's Flush), so a failed or slow log counts as the backend's
// error (ServerStats.BackendErrors) within Config.BackendTimeout. The
// lines of such a flush stay in the publisher's bounded buffer, which
// keeps sending them, so they may reach the log later, before the next
// flush's.
type Log struct {
	cfg LogConfig
	mu  sync.Mutex
	buf []byte
}

// LogConfig configures the log backend.
type LogConfig struct {
	// Publisher writes the records (required); Close closes it.
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
	if cfg.Name == "" {
		cfg.Name = "log"
	}
	return &Log{cfg: cfg}, nil
}

// Name is LogConfig.Name.
func (l *Log) Name() string { return l.cfg.Name }

// Flush publishes the snapshot's lines and waits until the log has them.
func (l *Log) Flush(ctx context.Context, s *Snapshot) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	b, err := appendJSONLines(l.buf[:0], s, l.cfg.Self, func(key string, line []byte) error {
		n++
		return l.cfg.Publisher.Publish(ctx, transport.Message{Time: s.Time, Key: []byte(key), Payload: line})
	})
	l.buf = b
	if err == nil {
		err = l.cfg.Publisher.Flush(ctx)
	}
	if err != nil {
		return fmt.Errorf("statsd: writing a flush of %d lines to the log: %w", n, err)
	}
	return nil
}

// Close closes the publisher, after the server's final flush.
func (l *Log) Close() error {
	if err := l.cfg.Publisher.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
		return err
	}
	return nil
}
