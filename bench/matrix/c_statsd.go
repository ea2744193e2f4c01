package matrix

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/brokerless/brokerless/statsd"
)

// statsdOurs is our StatsD server (package statsd) in this process: its
// defaults (two UDP readers, 4 MiB receive buffers), a 100 ms flush,
// and a backend that sums the counter's flushes.
type statsdOurs struct{}

func (statsdOurs) Name() string        { return "statsd" }
func (statsdOurs) Baseline() string    { return "raw-udp" }
func (statsdOurs) Peer() string        { return "etsy-statsd" }
func (statsdOurs) Can(o Options) error { return statsdCan(o) }

type sumBackend struct {
	key string
	n   atomic.Uint64
}

func (b *sumBackend) Name() string { return "bench" }

func (b *sumBackend) Flush(_ context.Context, s *statsd.Snapshot) error {
	for _, c := range s.Counters {
		if c.Key == b.key {
			b.n.Add(uint64(c.Count))
		}
	}
	return nil
}

type statsdOursLink struct {
	*udpSender
	srv  *statsd.Server
	sum  *sumBackend
	stop context.CancelFunc
	done chan error
}

func (statsdOurs) Open(ctx context.Context, o Options) (Link, error) {
	sum := &sumBackend{key: statsdName(o.Size)}
	cfg := statsd.Config{UDP: []string{"127.0.0.1:0"}, Backends: []statsd.Backend{sum},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.FlushInterval = statsdFlushMillis * time.Millisecond
	sctx, stop := context.WithCancel(context.Background())
	srv, err := statsd.NewServer(sctx, cfg)
	if err != nil {
		stop()
		return nil, err
	}
	l := &statsdOursLink{srv: srv, sum: sum, stop: stop, done: make(chan error, 1)}
	go func() { l.done <- srv.Serve(sctx) }()
	if l.udpSender, err = newUDPSender(srv.UDPAddrs()[0].String(), o.Size); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *statsdOursLink) Counted() (uint64, error) { return l.sum.n.Load(), nil }

func (l *statsdOursLink) Close() error {
	if l.udpSender != nil {
		l.c.Close()
	}
	l.stop()
	return <-l.done
}
