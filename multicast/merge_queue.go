package multicast

import (
	"unsafe"

	"github.com/brokerless/brokerless/transport"
)

// slotSize is what one slot of an eventQueue's ring takes, held or not.
const slotSize = int(unsafe.Sizeof(transport.Event{}))

// headerSize is what one header of a copied event's headers slice takes.
const headerSize = int(unsafe.Sizeof(transport.Header{}))

// minRing is the ring an eventQueue starts with, and keeps when empty.
const minRing = 16

// eventQueue is a bounded FIFO of events copied out of the engine's
// batches: the live events a subscriber holds while it reads its
// archive. Its byte bound counts its ring's slots with the copies of
// the events' bytes; the ring grows by doubling while that fits, and is
// let go when the queue is empty again.
type eventQueue struct {
	buf       []transport.Event
	head, n   int
	bytes     int // the held events' copies (eventSize)
	maxEvents int
	maxBytes  int
}

func newEventQueue(maxEvents, maxBytes int) eventQueue {
	return eventQueue{maxEvents: maxEvents, maxBytes: maxBytes}
}

func (q *eventQueue) len() int { return q.n }

// at returns the i-th event from the front.
func (q *eventQueue) at(i int) *transport.Event {
	j := q.head + i
	if j >= len(q.buf) {
		j -= len(q.buf)
	}
	return &q.buf[j]
}

func (q *eventQueue) front() *transport.Event { return q.at(0) }

func (q *eventQueue) back() *transport.Event { return q.at(q.n - 1) }

// full reports whether an event whose copy takes size more bytes would
// exceed a bound, with the slots of the ring it then needs.
func (q *eventQueue) full(size int) bool {
	slots := len(q.buf)
	if q.n == slots {
		slots = q.grown()
	}
	return q.n >= q.maxEvents || q.n > 0 && q.bytes+size+slots*slotSize > q.maxBytes
}

// grown is the ring's size once grown.
func (q *eventQueue) grown() int { return min(max(minRing, 2*len(q.buf)), max(q.maxEvents, 1)) }

// push appends a copy of ev; the caller makes room first (full).
func (q *eventQueue) push(ev *transport.Event) {
	if q.n == len(q.buf) {
		q.grow()
	}
	c := copyEvent(ev)
	q.bytes += eventSize(&c)
	*q.at(q.n) = c
	q.n++
}

// pop drops the front event.
func (q *eventQueue) pop() {
	e := q.front()
	q.bytes -= eventSize(e)
	*e = transport.Event{}
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	if q.n == 0 && len(q.buf) > minRing {
		q.buf, q.head = nil, 0 // a replay's ring is not kept
	}
}

func (q *eventQueue) grow() {
	buf := make([]transport.Event, max(q.grown(), q.n+1))
	for i := range q.n {
		buf[i] = *q.at(i)
	}
	q.buf, q.head = buf, 0
}

// eventSize is what the copy of an event takes besides its slot: the
// bytes copyEvent allocates.
func eventSize(ev *transport.Event) int {
	if ev.Kind != transport.EventMessage {
		return 0
	}
	m := &ev.Message
	n := len(m.Key) + len(m.Payload)
	for _, h := range m.Headers {
		n += len(h.Value) + headerSize
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
