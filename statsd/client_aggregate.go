package statsd

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// clientTallies sums counter increments (rate 1) in the client between
// flushes: an increment of a known counter is one atomic add, and the
// flush sends one line per counter. It is a fixed open-addressing table:
// a counter claims a slot on its first increment and keeps it; when its
// probe run is full, the counter is sent line by line instead. So memory
// is bounded and a counter allocates only when it claims its slot.
type clientTallies struct {
	slots []clientTally
	mask  uint64
}

// clientTally is one counter. Its padding keeps counters incremented on
// different cores on separate cache lines.
type clientTally struct {
	key atomic.Pointer[clientTallyKey]
	n   atomic.Int64
	_   [48]byte
}

type clientTallyKey struct {
	name string
	tags []string
}

// clientTallyProbes bounds the slots a counter may look at.
const clientTallyProbes = 8

func newClientTallies(keys int) clientTallies {
	size := 1
	for size < keys {
		size <<= 1
	}
	return clientTallies{slots: make([]clientTally, size), mask: uint64(size - 1)}
}

// add adds n to the counter of name and tags and returns its slot; nil
// when the counter has no slot and must be sent as a line.
func (t *clientTallies) add(seed maphash.Seed, name string, tags []string, n int64) *clientTally {
	h := maphash.String(seed, name)
	for _, tag := range tags {
		h = h*0x100000001b3 ^ maphash.String(seed, tag)
	}
	for i := range uint64(clientTallyProbes) {
		s := &t.slots[(h+i)&t.mask]
		k := s.key.Load()
		if k == nil {
			k = &clientTallyKey{name: strings.Clone(name), tags: cloneClientTags(tags)}
			if !s.key.CompareAndSwap(nil, k) {
				k = s.key.Load()
			}
		}
		if k.name == name && slices.Equal(k.tags, tags) {
			s.n.Add(n)
			return s
		}
	}
	return nil
}

func cloneClientTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	c := make([]string, len(tags))
	for i, t := range tags {
		c[i] = strings.Clone(t)
	}
	return c
}

// flushTallies turns every counter incremented since the last flush into
// a line. Called by the sender goroutine.
func (c *Client) flushTallies() {
	for i := range c.tallies.slots {
		if s := &c.tallies.slots[i]; s.key.Load() != nil {
			c.makeRoom()
			c.emitTally(s)
		}
	}
}

// emitTally turns what counter s holds into a line, if anything. The
// flush and a late increment (see Client.count) may both call it: the
// swap gives each increment to exactly one line.
func (c *Client) emitTally(s *clientTally) {
	if n := s.n.Swap(0); n != 0 {
		k := s.key.Load()
		var num [clientNumberBytes]byte
		c.emit(&clientLine{name: k.name, num: strconv.AppendInt(num[:0], n, 10), typ: "c", tags: k.tags})
	}
}
