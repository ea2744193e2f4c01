package multicast

import (
	"net/netip"
	"sync"
)

// inbox is a bounded queue of datagrams with reused buffers, from the
// goroutine reading a unicast socket to the one that owns the engine:
// the subscriber's repairs and NCFs, the publisher's NACKs.
type inbox struct {
	mu      sync.Mutex
	bufs    [][]byte
	from    []netip.AddrPort
	n       int
	dropped uint64
}

func newInbox(n int) inbox {
	return inbox{bufs: make([][]byte, n), from: make([]netip.AddrPort, n)}
}

// put copies b in; it reports false (and counts a drop) when full.
func (q *inbox) put(b []byte, from netip.AddrPort) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == len(q.bufs) {
		q.dropped++
		return false
	}
	q.bufs[q.n] = append(q.bufs[q.n][:0], b...)
	q.from[q.n] = from
	q.n++
	return true
}

// drain calls f for each queued datagram, oldest first, empties the
// queue and returns how many it held. f must not keep b.
func (q *inbox) drain(f func(b []byte, from netip.AddrPort)) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.n
	for i := 0; i < n; i++ {
		f(q.bufs[i], q.from[i])
	}
	q.n = 0
	return n
}

func (q *inbox) empty() bool { return !q.pending() }

func (q *inbox) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n > 0
}

func (q *inbox) drops() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
