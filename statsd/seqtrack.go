package statsd

import (
	"math/bits"
	"sort"
)

// seqWindow is how far behind the newest packet a late packet still
// counts as received: a packet is lost once seqWindow later packets
// arrived without it.
const seqWindow = 64

// seqTracker follows the sequence lines of at most max clients.
type seqTracker struct {
	max, idleFlushes int
	clients          map[string]*seqClient
	lines            uint64
}

// seqClient is one client's position: next is one past the highest
// sequence number seen; bit i of window is set when next-1-i arrived.
type seqClient struct {
	next   uint64
	window uint64
	idle   int
	ClientLoss
	total ClientLoss
}

// ClientLoss is the loss accounting of one client that numbers its
// packets, over one flush interval.
type ClientLoss struct {
	// ID is the client id of its sequence lines.
	ID string
	// Received counts its packets that arrived; Lost those that did not
	// (a packet is lost once 64 later ones arrived without it, or when
	// the client goes idle).
	Received, Lost uint64
	// Reordered arrived late but within the window (not lost);
	// Duplicates arrived twice.
	Reordered, Duplicates uint64
	// Restarts counts sequence numbers that went back further than the
	// window: the client restarted under the same id.
	Restarts uint64
	// TotalReceived and TotalLost count since the client was first seen.
	TotalReceived, TotalLost uint64
}

// observe records packet seq of client id. It reports false when the
// client is new and max clients are tracked already.
func (t *seqTracker) observe(id []byte, seq uint64) bool {
	t.lines++
	c := t.clients[string(id)]
	if c == nil {
		if len(t.clients) >= t.max {
			return false
		}
		if t.clients == nil {
			t.clients = make(map[string]*seqClient)
		}
		c = &seqClient{ClientLoss: ClientLoss{ID: string(id)}}
		c.start(seq)
		t.clients[c.ID] = c
		return true
	}
	c.idle = 0
	c.Received++
	switch {
	case seq >= c.next:
		c.advance(seq - c.next + 1)
	case c.next-1-seq < seqWindow:
		bit := uint64(1) << (c.next - 1 - seq)
		if c.window&bit != 0 {
			c.Duplicates++
			c.Received--
		} else {
			c.window |= bit
			c.Reordered++
		}
	default:
		c.Restarts++
		c.Received--
		c.start(seq)
	}
	return true
}

// start (re)starts a client at seq: everything before counts as
// received.
func (c *seqClient) start(seq uint64) {
	c.next, c.window = seq+1, ^uint64(0)
	c.Received++
}

// advance moves the window forward by k ≥ 1 packets, the newest of
// which arrived; the packets pushed out of the window without arriving
// are lost.
func (c *seqClient) advance(k uint64) {
	if k >= seqWindow {
		c.Lost += seqWindow - uint64(bits.OnesCount64(c.window)) + (k - seqWindow)
		c.window = 1
	} else {
		out := c.window >> (seqWindow - k)
		c.Lost += k - uint64(bits.OnesCount64(out))
		c.window = c.window<<k | 1
	}
	c.next += k
}

// flush returns the interval's accounting, sorted by client id, and
// starts the next interval; clients idle for idleFlushes flushes are
// forgotten, what is missing in their window counted lost.
func (t *seqTracker) flush() (lines uint64, out []ClientLoss) {
	lines, t.lines = t.lines, 0
	for id, c := range t.clients {
		expire := c.idle >= t.idleFlushes
		if expire {
			c.Lost += seqWindow - uint64(bits.OnesCount64(c.window))
		}
		c.idle++
		c.total.Received += c.Received
		c.total.Lost += c.Lost
		l := c.ClientLoss
		l.TotalReceived, l.TotalLost = c.total.Received, c.total.Lost
		out = append(out, l)
		c.ClientLoss = ClientLoss{ID: c.ID}
		if expire {
			delete(t.clients, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return lines, out
}
