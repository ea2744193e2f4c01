package statsd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of RepeaterConfig.
const (
	DefaultRepeaterQueue        = 4096
	DefaultRepeaterQueueBytes   = 8 << 20
	DefaultRepeaterWriteTimeout = 5 * time.Second
)

// RepeaterConfig configures a Repeater (Etsy's repeater backend:
// repeater and repeaterProtocol).
type RepeaterConfig struct {
	// Targets are the host:port of the StatsD servers to forward to.
	Targets []string
	// Protocol is "udp" (default; also "udp4", "udp6") or "tcp". Over
	// TCP each packet is sent ending with a newline.
	Protocol string
	// Queue and QueueBytes bound the packets waiting to be sent; beyond
	// them packets are dropped and counted. Defaults 4096 and 8 MiB.
	Queue, QueueBytes int
	// WriteTimeout bounds one write to a TCP target: a target that
	// stops reading (a stopped process) fails the packet, counted as
	// dropped, and is dialed again. Close waits for the queue to drain
	// that long at most. Default 5 s.
	WriteTimeout time.Duration
	// Logger receives send failures. Default: discard.
	Logger *slog.Logger
}

func (c *RepeaterConfig) setDefaults() {
	if c.Protocol == "" {
		c.Protocol = "udp"
	}
	setDefault(&c.Queue, DefaultRepeaterQueue)
	setDefault(&c.QueueBytes, DefaultRepeaterQueueBytes)
	setDefault(&c.WriteTimeout, DefaultRepeaterWriteTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *RepeaterConfig) validate() error {
	switch c.Protocol {
	case "udp", "udp4", "udp6", "tcp":
	default:
		return badConfig("Protocol", c.Protocol, "must be udp, udp4, udp6 or tcp")
	}
	if len(c.Targets) == 0 {
		return badConfig("Targets", "(none)", "at least one host:port is required")
	}
	for _, t := range c.Targets {
		if err := checkDialAddr("Targets", c.Protocol, t, "127.0.0.1:8125"); err != nil {
			return err
		}
	}
	switch {
	case c.Queue < 1:
		return badConfig("Queue", c.Queue, "must be positive")
	case c.QueueBytes < 1:
		return badConfig("QueueBytes", c.QueueBytes, "must be positive")
	case c.WriteTimeout < 0:
		return badConfig("WriteTimeout", c.WriteTimeout, "must not be negative")
	}
	return nil
}

// Repeater is a backend that forwards every packet received, as it
// was, to other StatsD servers. It never blocks the readers.
type Repeater struct {
	cfg     RepeaterConfig
	queue   chan []byte
	queued  atomic.Int64 // bytes in queue
	sent    atomic.Uint64
	dropped atomic.Uint64
	conns   []io.WriteCloser
	// drainBy is when Close stops waiting for the queue to drain (Unix
	// nanoseconds; 0 until Close): no write lasts past it.
	drainBy atomic.Int64
	wg      sync.WaitGroup
	once    sync.Once
}

// NewRepeater dials the targets (for UDP that only resolves them) and
// starts the sending goroutine.
func NewRepeater(ctx context.Context, cfg RepeaterConfig) (*Repeater, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Repeater{cfg: cfg, queue: make(chan []byte, cfg.Queue)}
	var d net.Dialer
	for _, t := range cfg.Targets {
		c, err := d.DialContext(ctx, cfg.Protocol, t)
		if err != nil {
			r.closeConns()
			var op *net.OpError
			if errors.As(err, &op) && op.Err != nil {
				err = op.Err
			}
			return nil, fmt.Errorf("statsd: repeater %s: %w", t, err)
		}
		r.conns = append(r.conns, c)
	}
	r.wg.Add(1)
	go r.send()
	return r, nil
}

// Name is "repeater".
func (r *Repeater) Name() string { return "repeater" }

// Flush does nothing: packets are forwarded as they come.
func (r *Repeater) Flush(context.Context, *Snapshot) error { return nil }

// Packet queues a copy of p, or drops it when the queue is full.
func (r *Repeater) Packet(p []byte) {
	if r.queued.Add(int64(len(p))) > int64(r.cfg.QueueBytes) {
		r.queued.Add(-int64(len(p)))
		r.dropped.Add(1)
		return
	}
	select {
	case r.queue <- append([]byte(nil), p...):
	default:
		r.queued.Add(-int64(len(p)))
		r.dropped.Add(1)
	}
}

func (r *Repeater) send() {
	defer r.wg.Done()
	for p := range r.queue {
		r.queued.Add(-int64(len(p)))
		if r.cfg.Protocol == "tcp" && (len(p) == 0 || p[len(p)-1] != '\n') {
			p = append(p, '\n')
		}
		ok := true
		for i, c := range r.conns {
			r.setDeadline(c)
			if _, err := c.Write(p); err != nil {
				ok = false
				r.cfg.Logger.Warn("statsd: repeater send failed", "target", r.cfg.Targets[i], "err", err)
				if r.cfg.Protocol == "tcp" {
					r.redial(i)
				}
			}
		}
		if ok {
			r.sent.Add(1)
		} else {
			r.dropped.Add(1)
		}
	}
}

// setDeadline bounds a write to a TCP target by WriteTimeout, and by
// Close's drainBy once Close waits.
func (r *Repeater) setDeadline(c io.Writer) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	dl := time.Now().Add(r.cfg.WriteTimeout)
	if by := r.drainBy.Load(); by != 0 && dl.UnixNano() > by {
		dl = time.Unix(0, by)
	}
	_ = tc.SetWriteDeadline(dl)
}

// redial replaces a broken TCP connection; the next packet goes to the
// new one (or fails again and retries). Once Close waits, it does not
// dial: the rest of the queue fails.
func (r *Repeater) redial(i int) {
	r.conns[i].Close()
	if r.drainBy.Load() != 0 {
		r.conns[i] = failedConn{net.ErrClosed}
		return
	}
	c, err := net.DialTimeout("tcp", r.cfg.Targets[i], time.Second)
	if err != nil {
		r.conns[i] = failedConn{err}
		return
	}
	r.conns[i] = c
}

// counts returns the packets sent and dropped since the last call.
func (r *Repeater) counts() (sent, dropped uint64) {
	return r.sent.Swap(0), r.dropped.Swap(0)
}

// Close sends what is queued, for WriteTimeout at most (what is left
// then is dropped and counted), and closes the connections.
func (r *Repeater) Close() error {
	r.once.Do(func() {
		r.drainBy.Store(time.Now().Add(r.cfg.WriteTimeout).UnixNano())
		close(r.queue)
		r.wg.Wait()
		r.closeConns()
	})
	return nil
}

func (r *Repeater) closeConns() {
	for _, c := range r.conns {
		c.Close()
	}
}

// failedConn stands for a TCP target that could not be redialed: writes
// fail (and redial again) until it answers.
type failedConn struct{ error }

func (f failedConn) Write([]byte) (int, error) { return 0, f.error }

func (failedConn) Close() error { return nil }
