package multicast

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/brokerless/brokerless/transport"
)

// queueMemory is what q takes: its ring of slots, and the copies of
// the held events' bytes.
func queueMemory(q *eventQueue) int {
	n := cap(q.buf) * int(unsafe.Sizeof(transport.Event{}))
	for i := range q.len() {
		m := &q.at(i).Message
		n += cap(m.Payload) + cap(m.Headers)*int(unsafe.Sizeof(transport.Header{}))
	}
	return n
}

// TestEventQueueBytes: the live events held while the archive is read
// take no more memory than BufferBytes, their queue's slots included,
// and the queue lets its ring go once it is empty again. (Each event
// counted 64 bytes besides its own, its slot in the ring takes 336, and
// the ring, grown by doubling, was kept for good: at the defaults,
// 262,144 events of 64 bytes took 104 MB for a bound of 64 MiB, and a
// subscriber kept 88 MB after one late join.)
func TestEventQueueBytes(t *testing.T) {
	for _, c := range []struct{ events, bytes, size int }{
		{DefaultArchiveBuffer, DefaultArchiveBufferBytes, 64},
		{DefaultArchiveBuffer, 1 << 20, 64},
		{1000, 1 << 30, 0},
		{1 << 20, 1 << 20, 4000},
	} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			q := newEventQueue(c.events, c.bytes)
			ev := transport.Event{Kind: transport.EventMessage, Message: transport.Message{Stream: sA, Payload: make([]byte, c.size),
				Headers: []transport.Header{{Key: "k", Value: []byte("v")}}}}
			peak, evicted := 0, 0
			for i := 0; evicted < 4096; i++ {
				for q.len() > 0 && q.full(eventSize(&ev)) {
					q.pop()
					evicted++
				}
				ev.Message.Seq = uint64(i)
				q.push(&ev)
				if i%8192 == 0 || evicted > 0 && evicted%1024 == 0 {
					peak = max(peak, queueMemory(&q))
				}
			}
			if peak > c.bytes || q.len() > c.events {
				t.Errorf("%d events held in %d bytes; bounds %d events, %d bytes", q.len(), peak, c.events, c.bytes)
			}
			if q.len() < min(c.events, c.bytes/(int(unsafe.Sizeof(transport.Event{}))+c.size+64))/2 {
				t.Errorf("%d events held: the bounds allow about twice as many", q.len())
			}
			for q.len() > 0 {
				q.pop()
			}
			if cap(q.buf) > 16 {
				t.Errorf("an empty queue keeps a ring of %d slots", cap(q.buf))
			}
		})
	}
}
