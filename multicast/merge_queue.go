package multicast

import "github.com/brokerless/brokerless/transport"

// queuedOverhead is what one queued event counts for besides its bytes.
const queuedOverhead = 64

// eventQueue is a bounded FIFO of events copied out of the engine's
// batches: the live events a subscriber holds while it reads its
// archive. It grows by doubling up to its bound.
type eventQueue struct {
	buf       []transport.Event
	head, n   int
	bytes     int
	maxEvents int
	maxBytes  int
}

func newEventQueue(maxEvents, maxBytes int) eventQueue {
	return eventQueue{maxEvents: maxEvents, maxBytes: maxBytes}
}

func (q *eventQueue) len() int { return q.n }

// at returns the i-th event from the front.
func (q *eventQueue) at(i int) *transport.Event { return &q.buf[(q.head+i)&(len(q.buf)-1)] }

func (q *eventQueue) front() *transport.Event { return q.at(0) }

func (q *eventQueue) back() *transport.Event { return q.at(q.n - 1) }

// full reports whether an event of size more bytes would exceed a bound.
func (q *eventQueue) full(size int) bool {
	return q.n >= q.maxEvents || q.n > 0 && q.bytes+size > q.maxBytes
}

// push appends a copy of ev; the caller makes room first (full).
func (q *eventQueue) push(ev *transport.Event) {
	if q.n == len(q.buf) {
		q.grow()
	}
	c := copyEvent(ev)
	q.bytes += eventSize(&c)
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = c
	q.n++
}

// pop drops the front event.
func (q *eventQueue) pop() {
	e := q.front()
	q.bytes -= eventSize(e)
	*e = transport.Event{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
}

func (q *eventQueue) grow() {
	size := max(16, 2*len(q.buf))
	buf := make([]transport.Event, size)
	for i := range q.n {
		buf[i] = *q.at(i)
	}
	q.buf, q.head = buf, 0
}

// eventSize is what an event counts for in the queue's byte bound.
func eventSize(ev *transport.Event) int {
	n := queuedOverhead
	if ev.Kind == transport.EventMessage {
		m := &ev.Message
		n += len(m.Key) + len(m.Payload)
		for _, h := range m.Headers {
			n += len(h.Value) + 16
		}
	}
	return n
}

// copyEvent copies the slices of a message event into one allocation
// (header keys and topics are strings: they need no copy).
func copyEvent(ev *transport.Event) transport.Event {
	c := *ev
	if ev.Kind != transport.EventMessage {
		return c
	}
	m := &c.Message
	size := len(m.Key) + len(m.Payload)
	for _, h := range m.Headers {
		size += len(h.Value)
	}
	b := make([]byte, 0, size)
	take := func(v []byte) []byte {
		if v == nil {
			return nil
		}
		at := len(b)
		b = append(b, v...)
		return b[at:len(b):len(b)]
	}
	m.Key, m.Payload = take(m.Key), take(m.Payload)
	if m.Headers != nil {
		hs := make([]transport.Header, len(m.Headers))
		for i, h := range m.Headers {
			hs[i] = transport.Header{Key: h.Key, Value: take(h.Value)}
		}
		m.Headers = hs
	}
	return c
}
