package statsd

import (
	"context"
	"errors"
	"hash/maphash"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// Client sends metrics to a StatsD server. It is safe for concurrent use.
//
// A metric call formats its line and copies it into the packet its shard
// is filling; a full packet joins a bounded queue that one goroutine
// writes to the network, and a partly filled one is flushed every
// FlushInterval. Counter increments are summed in the client and sent
// once per flush (ClientConfig.CounterKeys). Calls never wait for the
// network and do not allocate (but for a counter's first increment, and
// its first after it gave its place among the summed counters up):
// when the queue is full, lines are dropped and counted (Stats).
type Client struct {
	cfg         ClientConfig
	framing     clientFraming
	defaultTags string // ClientConfig.Tags, sanitized and joined by ','
	defaultKey  int    // bytes ClientConfig.Tags add to a key (measureTags)
	defaultN    int    // ClientConfig.Tags that are not empty
	prefixKept  bool   // sanitizing keeps a character of ClientConfig.Prefix: no name is emptied (client_limits.go)
	head        int    // bytes reserved at the start of a packet for the sequence line
	seed        maphash.Seed
	rand        func() uint64 // sampling; math/rand/v2's per-thread generator

	tallies clientTallies // counters summed between flushes
	closed  atomic.Bool   // Close was called: a summed increment is emitted at once (Client.count)

	shards []clientShard
	queue  chan *clientPacket // filled packets, oldest first; never full
	free   chan *clientPacket // empty packets: QueueBytes/MaxPacketSize of them when the queue is empty

	_        cpu.CacheLinePad // the fields above are read by every call, those below written per packet
	counters clientCounters
	w        clientWriter // owned by the sender goroutine

	flushReq chan chan struct{} // Flush: closed once the sender flushed and wrote the queue
	closing  chan struct{}
	done     chan struct{}
	once     sync.Once
	closeErr error // of the connection, set before done is closed
}

// ClientStats is a snapshot of a Client's counters.
type ClientStats struct {
	Packets     uint64 // packets written
	Bytes       uint64 // bytes written, sequence lines included
	Lines       uint64 // metric lines written (one counter line sums a flush interval's increments)
	Dropped     uint64 // lines dropped: queue full, write failed, longer than a packet, empty name, key longer than MaxKeyLen or more than MaxTags tags, NaN or infinite value, negative duration, after Close
	WriteErrors uint64 // packets the network refused
}

type clientCounters struct {
	packets, bytes, lines, dropped, writeErrors atomic.Uint64
}

// NewClient connects to cfg.Addr (ctx bounds the dial) and starts the
// goroutine that writes packets.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	conn, err := (&net.Dialer{Timeout: cfg.WriteTimeout}).DialContext(ctx, cfg.Network, cfg.Addr)
	if err != nil {
		return nil, err
	}
	defaultKey, defaultN := measureTags(cfg.Tags)
	c := &Client{
		cfg:         cfg,
		framing:     clientFramingOf(cfg.Network),
		defaultTags: joinClientTags(cfg.Tags),
		defaultKey:  defaultKey,
		defaultN:    defaultN,
		seed:        maphash.MakeSeed(),
		rand:        rand.Uint64,
		shards:      make([]clientShard, cfg.Shards),
		flushReq:    make(chan chan struct{}),
		closing:     make(chan struct{}),
		done:        make(chan struct{}),
	}
	c.cfg.Prefix = string(appendClientClean(nil, cfg.Prefix, &clientReservedInName))
	c.prefixKept = nameKept(c.cfg.Prefix)
	if cfg.Sequence {
		c.head = len(AppendSeqLine(nil, cfg.ClientID, 1<<64-1)) + len("\n")
	}
	if cfg.CounterKeys > 0 {
		c.tallies = newClientTallies(cfg.CounterKeys)
	}
	spare := cfg.QueueBytes / cfg.MaxPacketSize
	total := cfg.Shards + spare
	c.queue = make(chan *clientPacket, total)
	c.free = make(chan *clientPacket, total)
	slab := make([]byte, total*cfg.MaxPacketSize)
	for i := range total {
		p := &clientPacket{b: slab[i*cfg.MaxPacketSize : i*cfg.MaxPacketSize+c.head : (i+1)*cfg.MaxPacketSize]}
		if i < cfg.Shards {
			c.shards[i].pkt = p
		} else {
			c.free <- p
		}
	}
	c.w = newClientWriter(c, conn)
	go c.run()
	return c, nil
}

// joinClientTags sanitizes tags and joins the non-empty ones with ','.
func joinClientTags(tags []string) string {
	var b []byte
	for _, t := range tags {
		if t == "" {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = appendClientClean(b, t, &clientReservedInTag)
	}
	return string(b)
}

// ErrClientClosed is returned by Flush after Close.
var ErrClientClosed = errors.New("statsd: client closed")

// Flush sends what was recorded before the call, without waiting for the
// next FlushInterval: the sender goroutine turns the summed counters into
// lines, queues every partly filled packet and writes the queue, while
// Flush waits, at most until ctx is done (it then returns ctx.Err(), and
// the sender finishes anyway). As always, a write that fails drops its
// lines, counted in Stats. For short-lived processes, and before a
// pause such as a serverless function's freeze; Close flushes too.
func (c *Client) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	flushed := make(chan struct{})
	select {
	case c.flushReq <- flushed:
	case <-c.closing:
		return ErrClientClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close flushes every buffered line and stops the client. It writes what
// is queued for at most WriteTimeout (plus one write already under way)
// and drops the rest. To bound the wait by a context instead, call
// Flush(ctx) first: Close then has little left to write. Metric calls
// after Close are dropped and counted. It returns the error of closing
// the connection.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		close(c.closing)
	})
	<-c.done
	return c.closeErr
}

// Stats returns a snapshot of the counters.
func (c *Client) Stats() ClientStats {
	return ClientStats{
		Packets:     c.counters.packets.Load(),
		Bytes:       c.counters.bytes.Load(),
		Lines:       c.counters.lines.Load(),
		Dropped:     c.counters.dropped.Load(),
		WriteErrors: c.counters.writeErrors.Load(),
	}
}
