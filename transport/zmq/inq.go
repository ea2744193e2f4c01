package zmq

import (
	"context"
	"sync"
)

// inItem is a ZMTP message received, with the connection it came on.
type inItem struct {
	frames [][]byte
	size   int
	conn   *inConn
	// ended: no message, but word that conn closed, after its last.
	ended bool
}

// inq is a subscriber's bounded receive queue, by count and by bytes.
// Readers block in put while it is full, so a subscriber that does not
// keep up stops reading, and its publisher's queue for it fills.
type inq struct {
	mu       sync.Mutex
	items    []inItem
	head     int
	bytes    int
	maxItems int
	maxBytes int
	notEmpty chan struct{}
	notFull  chan struct{}
}

func newInq(maxItems, maxBytes int) *inq {
	return &inq{maxItems: maxItems, maxBytes: maxBytes, notEmpty: make(chan struct{}, 1), notFull: make(chan struct{}, 1)}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// put queues it, waiting while the queue is full, unless cancel closes
// first (false). A message larger than the byte bound goes in when the
// queue is empty.
func (q *inq) put(it inItem, cancel <-chan struct{}) bool {
	for {
		q.mu.Lock()
		n := len(q.items) - q.head
		if n == 0 || n < q.maxItems && q.bytes+it.size <= q.maxBytes {
			q.items = append(q.items, it)
			q.bytes += it.size
			room := n+1 < q.maxItems && q.bytes < q.maxBytes
			q.mu.Unlock()
			signal(q.notEmpty)
			if room {
				signal(q.notFull) // pass the turn to another waiting reader
			}
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.notFull:
		case <-cancel:
			return false
		}
	}
}

// putEnded queues word that connection c closed, behind its last
// message, whether the queue is full or not: one per connection, and
// only for a connection that queued a message (of one that did not,
// the subscriber has nothing to tell). The word holds the connection's
// number only, not the connection and its buffers. So ended words are
// bounded without a drop: those in the queue are of connections that
// had a message in it (at most maxItems) or were open when the oldest
// item in it was queued (at most MaxPeers and one per connected
// endpoint).
func (q *inq) putEnded(c *inConn) {
	if !c.queued {
		return
	}
	q.mu.Lock()
	q.items = append(q.items, inItem{conn: &inConn{id: c.id}, ended: true})
	q.mu.Unlock()
	signal(q.notEmpty)
}

// get takes the oldest message, waiting until there is one, ctx is
// done or closed is closed.
func (q *inq) get(ctx context.Context, closed <-chan struct{}) (inItem, error) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = inItem{}
			q.head++
			if q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
			} else if q.head > 1024 && q.head*2 > len(q.items) {
				q.items = q.items[:copy(q.items, q.items[q.head:])]
				q.head = 0
			}
			q.bytes -= it.size
			more := q.head < len(q.items)
			q.mu.Unlock()
			signal(q.notFull)
			if more {
				signal(q.notEmpty)
			}
			return it, nil
		}
		q.mu.Unlock()
		select {
		case <-q.notEmpty:
		case <-ctx.Done():
			return inItem{}, ctx.Err()
		case <-closed:
			return inItem{}, errClosedSocket
		}
	}
}
