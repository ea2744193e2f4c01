package multicast

import (
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/pretouch"
)

// batch carries events from the subscriber's reader goroutine to the
// application. Event slices point into arena; both are reused once the
// application has moved past the batch, so steady-state delivery does
// not allocate.
type batch struct {
	events []transport.Event
	arena  []byte
	hdrs   []transport.Header
}

const (
	batchEvents = 512
	batchBytes  = 1 << 20
)

// newBatch makes a batch with its memory mapped (package pretouch): a
// subscriber makes Queue+1 of them, 15 MiB by default, which the reader
// would otherwise fault in page by page during a feed's first seconds.
func newBatch() *batch {
	events, arena := make([]transport.Event, batchEvents), make([]byte, 64<<10)
	pretouch.Slice(events)
	pretouch.Slice(arena)
	return &batch{events: events[:0], arena: arena[:0]}
}

func (b *batch) reset() {
	b.events, b.arena, b.hdrs = b.events[:0], b.arena[:0], b.hdrs[:0]
}

// full reports whether the batch should be handed over before taking
// another event: it holds the events it was made for, or its arena's
// bytes. Batches never grow past that: an application reading for
// itself with no room left keeps full batches in Subscriber.over.
func (b *batch) full() bool { return len(b.events) >= batchEvents || len(b.arena) >= batchBytes }

// add copies ev, and the bytes it points to, into the batch.
//
// A message is copied into its slot by its Message part only (some 120
// of the event's 336 bytes): a slot that last held a message has its
// other parts zero already, one that held another kind is cleared
// first. Copying whole events was a third of a subscriber's own work a
// 64-byte message.
func (b *batch) add(ev *transport.Event) {
	if ev.Kind != transport.EventMessage {
		b.events = append(b.events, *ev)
		return
	}
	n := len(b.events)
	if n < cap(b.events) {
		b.events = b.events[:n+1]
	} else {
		b.events = append(b.events, transport.Event{Kind: transport.EventMessage})
	}
	slot := &b.events[n]
	if slot.Kind != transport.EventMessage {
		*slot = transport.Event{Kind: transport.EventMessage}
	}
	slot.Message = ev.Message
	m := &slot.Message
	m.Payload = b.copy(m.Payload)
	m.Key = b.copy(m.Key)
	if len(m.Headers) > 0 {
		start := len(b.hdrs)
		for _, h := range m.Headers {
			b.hdrs = append(b.hdrs, transport.Header{Key: h.Key, Value: b.copy(h.Value)})
		}
		m.Headers = b.hdrs[start:len(b.hdrs):len(b.hdrs)]
	}
}

// copy appends p to the arena and returns the copy. When the arena grows
// the earlier copies stay valid in the old array.
func (b *batch) copy(p []byte) []byte {
	if p == nil {
		return nil
	}
	start := len(b.arena)
	b.arena = append(b.arena, p...)
	return b.arena[start:len(b.arena):len(b.arena)]
}
