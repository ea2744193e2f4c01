package statsd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Console writes each flush as JSON lines, one object per metric:
//
//	{"ts":1700000000,"type":"counter","key":"api.hits;env=prod","values":{"count":4,"rate":0.4}}
//
// with type counter, gauge, timer, set or, with ConsoleConfig.Self,
// self (the server's own metrics, key "statsd.server.*"). Numbers are
// written as JavaScript does; NaN and infinities, which JSON lacks, as
// null.
//
// The writes happen on a goroutine of the Console's, so that a writer
// that blocks (a stdout pipe nobody reads) never holds a flush past its
// deadline: Flush waits for its lines until its context ends, then
// leaves them queued. At most one flush waits behind the one being
// written; a flush that finds that place taken is dropped and fails.
// The lines of dropped flushes, and those a failed write did not write,
// are counted in ServerStats.BackendLinesLost.
//
// Close (the Server's Close calls it) ends that goroutine: a write
// still blocked is interrupted where the writer has write deadlines
// (SetWriteDeadline: an *os.File on a pipe, a socket or a terminal the
// runtime polls, a net.Conn), and the flushes still queued are dropped,
// their lines lost. A writer without deadlines (a stdout left in
// blocking mode) cannot be interrupted: Close waits for it a second at
// most, then leaves the goroutine to its write and says so.
type Console struct {
	cfg ConsoleConfig
	w   io.Writer

	mu sync.Mutex
	// queue holds the flushes not written yet, the one being written
	// first; a goroutine writes them while it is not empty.
	queue []*consoleFlush
	// spare is a written flush's buffer, for the next one.
	spare []byte
	// lost counts the lines lost since the server last read it.
	lost uint64
	// writing is closed when the writer goroutine ends; nil while none
	// runs.
	writing chan struct{}
	closed  bool
}

// consoleCloseWait bounds Close's wait for a writer it cannot interrupt.
const consoleCloseWait = time.Second

// writeDeadliner is a writer whose blocked writes a deadline ends.
type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

// consoleQueue is the most flushes a Console holds: the one being
// written and one waiting.
const consoleQueue = 2

// consoleFlush is one flush's lines, and where its write's outcome goes.
type consoleFlush struct {
	b     []byte
	lines int
	done  chan error // buffered: the writer never waits for Flush
}

// ConsoleConfig configures the console backend.
type ConsoleConfig struct {
	// Self adds the server's own metrics: Etsy's counters and gauge of
	// the server (statsd.packets_received, metrics_received,
	// bad_lines_seen, timestamp_lag) and SelfStats, some 25 lines a
	// flush. Default off: a console is for watching what arrives.
	Self bool
}

// NewConsole writes to w.
func NewConsole(w io.Writer, cfg ConsoleConfig) *Console { return &Console{cfg: cfg, w: w} }

// Name is "console".
func (c *Console) Name() string { return "console" }

// Flush queues the snapshot's lines and waits until they are written or
// ctx ends.
func (c *Console) Flush(ctx context.Context, s *Snapshot) error {
	c.mu.Lock()
	buf := c.spare
	c.spare = nil
	c.mu.Unlock()
	f := &consoleFlush{done: make(chan error, 1)}
	f.b, _ = appendJSONLines(buf[:0], s, c.cfg.Self, func(string, []byte) error {
		f.lines++
		return nil
	})
	c.mu.Lock()
	if c.closed {
		c.lost += uint64(f.lines)
		c.mu.Unlock()
		return fmt.Errorf("statsd: console: a flush of %d lines dropped: %w", f.lines, errConsoleClosed)
	}
	if len(c.queue) >= consoleQueue {
		c.lost += uint64(f.lines)
		c.mu.Unlock()
		return fmt.Errorf("statsd: console: a flush of %d lines dropped: the writer is still blocked on an earlier flush", f.lines)
	}
	c.queue = append(c.queue, f)
	if len(c.queue) == 1 {
		c.writing = make(chan struct{})
		go c.write(c.writing)
	}
	c.mu.Unlock()
	select {
	case err := <-f.done:
		if err != nil {
			return fmt.Errorf("statsd: console: writing a flush of %d lines: %w", f.lines, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("statsd: console: a flush of %d lines not written yet (left queued): %w", f.lines, ctx.Err())
	}
}

// write writes the queued flushes in order, until none is left or the
// console is closed; then it closes done.
func (c *Console) write(done chan struct{}) {
	defer close(done)
	c.mu.Lock()
	for len(c.queue) > 0 {
		if c.closed {
			for _, f := range c.queue {
				c.lost += uint64(f.lines)
				f.done <- errConsoleClosed
			}
			break
		}
		f := c.queue[0]
		c.mu.Unlock()
		n, err := c.w.Write(f.b)
		c.mu.Lock()
		if err != nil {
			// The lines whose newline was not written are lost.
			c.lost += uint64(bytes.Count(f.b[min(n, len(f.b)):], []byte{'\n'}))
		}
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if cap(f.b) <= keepConsoleBuffer {
			c.spare = f.b
		}
		f.done <- err
	}
	c.queue = nil
	c.writing = nil
	c.mu.Unlock()
}

var errConsoleClosed = errors.New("console closed")

// Close stops the console: it interrupts a write still blocked, if the
// writer has write deadlines, drops the flushes still queued, and waits
// for its writer goroutine to end (a second at most for a writer it
// cannot interrupt, then it returns an error and leaves the goroutine).
// Later Flushes fail.
func (c *Console) Close() error {
	c.mu.Lock()
	c.closed = true
	done := c.writing
	c.mu.Unlock()
	if done == nil {
		return nil
	}
	dw, ok := c.w.(writeDeadliner)
	// Any time in the past ends a blocked write at once.
	if ok && dw.SetWriteDeadline(time.Unix(1, 0)) != nil {
		ok = false
	}
	if ok {
		// Only the console's write is blocked on this deadline; the
		// writer (os.Stdout) may be written again once it is done.
		defer dw.SetWriteDeadline(time.Time{})
	}
	t := time.NewTimer(consoleCloseWait)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("statsd: console: closed with its writer blocked in a write that cannot be interrupted (no write deadline); the write's goroutine is left to it")
	}
}

// keepConsoleBuffer is the largest buffer kept for the next flush.
const keepConsoleBuffer = 1 << 20

// linesLost returns the lines lost since the last call.
func (c *Console) linesLost() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.lost
	c.lost = 0
	return n
}

// appendJSONLines appends a snapshot's JSON lines to b, one a metric
// (with self, the server's own metrics too), and calls line, if not nil,
// with each metric's key and line (without its newline, valid only during
// the call). It stops at line's first error.
func appendJSONLines(b []byte, s *Snapshot, self bool, line func(key string, l []byte) error) ([]byte, error) {
	var err error
	add := func(typ, key string, values []Stat) {
		if err != nil {
			return
		}
		start := len(b)
		b = jsonLine(b, s.Timestamp, typ, key, values)
		if line != nil {
			err = line(key, b[start:len(b)-1])
		}
	}
	for _, v := range s.Counters {
		if v.Own && !self {
			continue
		}
		add("counter", v.Key, []Stat{{"count", v.Count}, {"rate", v.Rate}})
	}
	for _, v := range s.Gauges {
		if v.Own && !self {
			continue
		}
		add("gauge", v.Key, []Stat{{"value", v.Value}})
	}
	for _, v := range s.Timers {
		add("timer", v.Key, v.Stats)
	}
	for _, v := range s.Sets {
		add("set", v.Key, []Stat{{"count", float64(v.Count)}})
	}
	if self {
		for _, st := range s.SelfStats() {
			add("self", "statsd."+st.Name, []Stat{{"value", st.Value}})
		}
	}
	return b, err
}

func jsonLine(b []byte, ts int64, typ, key string, values []Stat) []byte {
	b = append(b, `{"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","key":`...)
	b = appendJSONString(b, key)
	b = append(b, `,"values":{`...)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v.Name)
		b = append(b, ':')
		if f := v.Value; f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			b = append(b, "null"...)
		} else {
			b = appendJSNumber(b, f)
		}
	}
	return append(b, "}}\n"...)
}

// appendJSONString appends s as a JSON string (RFC 8259): '"', '\\' and
// the control characters escaped, invalid UTF-8 as U+FFFD. (Go's
// strconv.Quote is not JSON: it writes "\x01".) Keys not sanitized
// (keyNameSanitize: false) may hold any byte but '\n'.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
