package statsd

import (
	"hash/maphash"
	"sync"

	"golang.org/x/sys/cpu"
)

// clientPacket is a packet being filled or waiting for the network.
type clientPacket struct {
	b     []byte // b[:Client.head] is reserved for the sequence line
	lines int
}

// clientShard fills one packet. Its padding keeps shards on separate
// cache lines, so callers on different cores do not slow each other.
type clientShard struct {
	_      cpu.CacheLinePad
	mu     sync.Mutex
	pkt    *clientPacket
	closed bool // Close flushed this shard: later lines are dropped
}

// shard picks the shard of a metric name.
func (c *Client) shard(name string) *clientShard {
	if len(c.shards) == 1 {
		return &c.shards[0]
	}
	h := maphash.String(c.seed, name)
	return &c.shards[(h>>32)*uint64(len(c.shards))>>32]
}

// emit copies l into its shard's packet, first queueing the packet if l
// does not fit. It never blocks on the network. A line longer than a
// packet is dropped. (A line without a name, or whose name the server
// would empty, never gets here: keyFits refused it.)
func (c *Client) emit(l *clientLine) {
	lines := 1
	if l.reset {
		lines = 2
	}
	n := l.size(c.cfg.Prefix, c.defaultTags)
	if c.framing == clientStream {
		n++ // the '\n' that ends the line
	}
	if c.head+n > c.cfg.MaxPacketSize {
		c.counters.dropped.Add(uint64(lines))
		return
	}
	s := c.shard(l.name)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.counters.dropped.Add(uint64(lines))
		return
	}
	p := s.pkt
	if len(p.b)+c.sep(p)+n > cap(p.b) {
		c.seal(s)
		p = s.pkt
	}
	if c.sep(p) == 1 {
		p.b = append(p.b, '\n')
	}
	p.b = l.appendTo(p.b, c.cfg.Prefix, c.defaultTags)
	if c.framing == clientStream {
		p.b = append(p.b, '\n')
	}
	p.lines += lines
	s.mu.Unlock()
}

// sep is the length of the separator a datagram needs before its next
// line.
func (c *Client) sep(p *clientPacket) int {
	if c.framing == clientDatagram && p.lines > 0 {
		return 1
	}
	return 0
}

// seal queues the shard's packet and gives the shard an empty one. With
// none free (the queue holds QueueBytes), the packet's lines are dropped
// and the shard starts it again. Called with s.mu held.
func (c *Client) seal(s *clientShard) {
	select {
	case fresh := <-c.free:
		c.queue <- s.pkt // never blocks: the queue has room for every packet
		s.pkt = fresh
	default:
		c.counters.dropped.Add(uint64(s.pkt.lines))
		s.pkt.reset(c.head)
	}
}

func (p *clientPacket) reset(head int) {
	p.b = p.b[:head]
	p.lines = 0
}

// flushShards queues every packet that has lines; final also closes the
// shards to later lines. Called by the sender goroutine.
func (c *Client) flushShards(final bool) {
	for i := range c.shards {
		s := &c.shards[i]
		c.makeRoom()
		s.mu.Lock()
		if s.pkt.lines > 0 {
			c.seal(s)
		}
		s.closed = final
		s.mu.Unlock()
	}
}
