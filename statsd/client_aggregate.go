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
// a counter claims a slot on its first increment; when its probe run is
// full, the counter is sent line by line instead. A counter idle for
// clientTallyIdleFlushes flushes in a row gives its slot up, so counters
// of names that come and go (high cardinality) do not keep the table
// full for good. So memory is bounded and a counter allocates only when
// it claims a slot.
type clientTallies struct {
	slots []clientTally
	mask  uint64
}

// clientTally is a slot: the counter that holds it, if any. Only a claim
// and an eviction write it; increments only read it.
type clientTally struct {
	key  atomic.Pointer[clientTallyKey]
	idle int // flushes in a row that found no increment; the sender's own
}

// clientTallyKey is a counter and its sum. The sum lives here, not in the
// slot, so an increment racing with the counter's eviction can never land
// in the next counter of the slot. It is 64 bytes: the allocator puts it
// alone on a cache line, so counters incremented on different cores do
// not slow each other.
type clientTallyKey struct {
	n    atomic.Int64
	name string
	tags []string
	_    [16]byte
}

// clientTallyProbes bounds the slots a counter may look at.
const clientTallyProbes = 8

// clientTallyIdleFlushes is how many flushes in a row without an
// increment make a counter give its slot up.
const clientTallyIdleFlushes = 10

func newClientTallies(keys int) clientTallies {
	size := 1
	for size < keys {
		size <<= 1
	}
	return clientTallies{slots: make([]clientTally, size), mask: uint64(size - 1)}
}

// find returns the slot and counter of name and tags, claiming a free
// slot if the counter has none; nil when its probe run is full.
func (t *clientTallies) find(seed maphash.Seed, name string, tags []string) (*clientTally, *clientTallyKey) {
	h := maphash.String(seed, name)
	for _, tag := range tags {
		h = h*0x100000001b3 ^ maphash.String(seed, tag)
	}
	for i := range uint64(clientTallyProbes) {
		s := &t.slots[(h+i)&t.mask]
		k := s.key.Load()
		if k == nil {
			fresh := &clientTallyKey{name: strings.Clone(name), tags: cloneClientTags(tags)}
			if s.key.CompareAndSwap(nil, fresh) {
				return s, fresh
			}
			if k = s.key.Load(); k == nil {
				continue
			}
		}
		if k.name == name && slices.Equal(k.tags, tags) {
			return s, k
		}
	}
	return nil, nil
}

// addTally adds n to counter k of slot s. If Close began (its last flush
// of the counters may have run before this add) or k lost its slot (the
// eviction's last swap may have run before it), nothing else will send
// what k holds: the increment takes it back and emits it as a line,
// dropped and counted once the client is closed. Atomics are
// sequentially consistent: an add after Close's or the eviction's final
// swap sees closed set or the slot changed.
func (c *Client) addTally(s *clientTally, k *clientTallyKey, n int64) {
	k.n.Add(n)
	if c.closed.Load() || s.key.Load() != k {
		c.emitTally(k)
	}
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
// a line, and frees the slots of counters idle for
// clientTallyIdleFlushes flushes. Called by the sender goroutine.
func (c *Client) flushTallies() {
	for i := range c.tallies.slots {
		s := &c.tallies.slots[i]
		k := s.key.Load()
		if k == nil {
			continue
		}
		c.makeRoom()
		if c.emitTally(k) {
			s.idle = 0
			continue
		}
		if s.idle++; s.idle >= clientTallyIdleFlushes {
			s.idle = 0
			s.key.Store(nil) // only the sender replaces a claimed key
			c.emitTally(k)   // an increment between the swap above and the Store
		}
	}
}

// emitTally turns what counter k holds into a line, if anything, and
// says whether it did. The flush and a late increment (addTally) may
// both call it: the swap gives each increment to exactly one line.
func (c *Client) emitTally(k *clientTallyKey) bool {
	n := k.n.Swap(0)
	if n == 0 {
		return false
	}
	var num [clientNumberBytes]byte
	c.emit(&clientLine{name: k.name, num: strconv.AppendInt(num[:0], n, 10), typ: "c", tags: k.tags})
	return true
}
