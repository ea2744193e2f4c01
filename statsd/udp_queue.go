package statsd

import "sync/atomic"

// udpQueueSlabs and udpSlabBytes bound what one UDP reader holds in
// user space between the socket and the aggregator: up to
// udpQueueSlabs slabs of udpSlabBytes of datagrams (4 MiB), on top of
// the kernel's receive buffer. Each read fills at least one slab.
const (
	udpQueueSlabs = 64
	udpSlabBytes  = 64 << 10
)

// readerPollMillis is how long a UDP reader waits in poll(2) for a
// datagram (Linux) before it looks again: it bounds how long closing
// the socket waits for its reader (net.Conn.Close waits for the read in
// progress to return).
const readerPollMillis = 50

// slab is datagrams read from a socket, packed end to end: datagram i
// is data[ends[i-1]:ends[i]].
type slab struct {
	data []byte
	ends []int
}

func (sl *slab) add(p []byte) {
	sl.data = append(sl.data, p...)
	sl.ends = append(sl.ends, len(sl.data))
}

func (sl *slab) fits(n int) bool { return len(sl.ends) == 0 || len(sl.data)+n <= cap(sl.data) }

func (sl *slab) reset() {
	sl.data = sl.data[:0]
	sl.ends = sl.ends[:0]
}

// udpQueue hands slabs from a socket's reading goroutine to its parsing
// goroutine. Neither allocates once the slabs exist: the parser returns
// each slab to free when it is done with it. full is closed when the
// socket is.
type udpQueue struct {
	full, free chan *slab
	made       int // slabs allocated so far, by the reading goroutine
	// pending counts the slabs put in full and not yet aggregated: while
	// it is above 0 the reader must not aggregate what it reads itself,
	// or it would pass them.
	pending atomic.Int64
}

func newUDPQueue() *udpQueue {
	return &udpQueue{full: make(chan *slab, udpQueueSlabs), free: make(chan *slab, udpQueueSlabs)}
}

// get returns an empty slab: a free one, a new one while fewer than
// udpQueueSlabs exist, else the next one the parser frees (waiting for
// it: the socket's buffer fills meanwhile).
func (q *udpQueue) get() *slab {
	select {
	case sl := <-q.free:
		return sl
	default:
	}
	if q.made < udpQueueSlabs {
		q.made++
		return &slab{data: make([]byte, 0, udpSlabBytes), ends: make([]int, 0, 256)}
	}
	return <-q.free
}

// put hands a filled slab to the parser.
func (q *udpQueue) put(sl *slab) {
	q.pending.Add(1)
	q.full <- sl
}

// done returns a slab the parser has aggregated.
func (q *udpQueue) done(sl *slab) {
	sl.reset()
	q.pending.Add(-1)
	q.free <- sl
}
