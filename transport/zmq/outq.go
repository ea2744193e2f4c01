package zmq

import "sync"

// zmsg is one ZMTP message queued for a peer: its frames, which no one
// changes once queued (the same frames are queued for every subscriber).
type zmsg struct {
	frames [][]byte
	// size is what it costs in memory, as memCost counts it.
	size int
	// msgs is the number of transport messages it carries (a pack's
	// count; 0 for a heartbeat or a subscription).
	msgs int
	// mark orders a publisher's messages, for Flush.
	mark uint64
	// end: a stream's end, which putEnd queues even into a full queue.
	end bool
}

// endReserve is how many ends a queue takes beyond its bounds when
// nothing queued can make room for them (every item an end, or held by
// the writer).
const endReserve = 64

// memCost is what a message of frames costs in memory: its bytes, and
// the slice headers and queue entry around them, so that byte bounds
// bound the memory held (a 64-byte payload costs about twice that).
func memCost(frames [][]byte) int {
	n := 64 + 24*len(frames)
	for _, f := range frames {
		n += len(f)
	}
	return n
}

// outq is a peer's bounded outbound queue, by count and by bytes. What
// the writer took counts until it releases it, written. A message larger
// than the byte bound is taken when the queue is empty, so that it is
// not refused for ever.
type outq struct {
	mu       sync.Mutex
	items    []zmsg
	count    int // queued and being written
	bytes    int // of those
	maxItems int
	maxBytes int
	closed   bool
	// queued is the mark of the last message queued.
	queued uint64
	// notify has a token when items were queued since the writer last
	// looked.
	notify chan struct{}
}

func newOutq(maxItems, maxBytes int) *outq {
	return &outq{maxItems: maxItems, maxBytes: maxBytes, notify: make(chan struct{}, 1)}
}

// tryPut queues m unless the queue is full or closed.
func (q *outq) tryPut(m zmsg) bool {
	q.mu.Lock()
	if q.closed || q.count >= q.maxItems || q.count > 0 && q.bytes+m.size > q.maxBytes {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, m)
	q.count++
	q.bytes += m.size
	if m.mark != 0 {
		q.queued = m.mark
	}
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true
}

// putEnd queues m, a stream's end, even into a full queue, which it
// makes room in by dropping, newest first, queued messages that are
// not ends: data (reported lost by the end that follows, which says
// where the stream stopped), then heartbeats. If that is not enough it
// goes beyond the bounds by up to endReserve ends. It returns false if
// the queue is closed, or would go beyond that; and what it dropped, in
// transport messages and ZMTP messages.
func (q *outq) putEnd(m zmsg) (ok bool, msgs, zmtp int) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false, 0, 0
	}
	full := func() bool { return q.count >= q.maxItems || q.count > 0 && q.bytes+m.size > q.maxBytes }
	for _, data := range []bool{true, false} {
		for i := len(q.items) - 1; i >= 0 && full(); i-- {
			it := q.items[i]
			if it.end || data != (it.msgs > 0) {
				continue
			}
			last := len(q.items) - 1
			copy(q.items[i:], q.items[i+1:])
			q.items[last] = zmsg{}
			q.items = q.items[:last]
			q.count--
			q.bytes -= it.size
			msgs += it.msgs
			if it.msgs > 0 {
				zmtp++
			}
		}
	}
	if full() && q.count >= q.maxItems+endReserve {
		q.mu.Unlock()
		return false, msgs, zmtp
	}
	q.items = append(q.items, m)
	q.count++
	q.bytes += m.size
	q.queued = m.mark
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return true, msgs, zmtp
}

// take moves every queued message to dst[:0] and returns it. They count
// against the bounds until release.
func (q *outq) take(dst []zmsg) []zmsg {
	q.mu.Lock()
	dst = append(dst[:0], q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.mu.Unlock()
	return dst
}

// release frees the room of messages taken and written.
func (q *outq) release(msgs []zmsg) {
	n := 0
	for i := range msgs {
		n += msgs[i].size
	}
	q.mu.Lock()
	q.count -= len(msgs)
	q.bytes -= n
	q.mu.Unlock()
}

// usage is what the queue holds, written or not.
func (q *outq) usage() (count, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.count, q.bytes
}

// lastQueued is the mark of the last message queued.
func (q *outq) lastQueued() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}

// isClosed reports whether close was called.
func (q *outq) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// close refuses further messages and drops what is queued. It returns
// how many transport messages it dropped, and in how many ZMTP messages
// (heartbeats and subscriptions are not counted).
func (q *outq) close() (msgs, zmtp int) {
	q.mu.Lock()
	q.closed = true
	for _, m := range q.items {
		q.bytes -= m.size
		msgs += m.msgs
		if m.msgs > 0 {
			zmtp++
		}
	}
	q.count -= len(q.items)
	clear(q.items)
	q.items = q.items[:0]
	q.mu.Unlock()
	return msgs, zmtp
}
