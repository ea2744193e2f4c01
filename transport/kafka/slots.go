package kafka

import (
	"context"
	"sync"

	"github.com/brokerless/brokerless/transport"
)

// slots counts the free places in the client's record buffer, so that a
// Publisher waits for room itself, honouring its context, and kgo's
// Produce never blocks. A publish takes as many places as it has
// records (all that are free, when fewer: it produces those and takes
// again), and each record's promise gives its place back. A publish
// that finds none free waits until a sixteenth of the buffer is free
// (or what it asked for, if less), so that a publisher held back by a
// full buffer wakes once for many records, not once a record.
type slots struct {
	mu     sync.Mutex
	free   int
	wakeAt int           // the free places that wake a waiting publish
	room   chan struct{} // closed when free reaches wakeAt; nil when none waits
}

func newSlots(n int) *slots {
	return &slots{free: n, wakeAt: max(1, n/16)}
}

// take takes at least one and at most n places, waiting while none is
// free; it fails when ctx ends or closing is closed first.
func (s *slots) take(ctx context.Context, closing <-chan struct{}, n int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for {
		s.mu.Lock()
		if s.free > 0 {
			k := min(s.free, n)
			s.free -= k
			s.mu.Unlock()
			return k, nil
		}
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		s.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-closing:
			return 0, transport.ErrClosed
		}
	}
}

// put gives n places back.
func (s *slots) put(n int) {
	s.mu.Lock()
	s.free += n
	if s.room != nil && s.free >= s.wakeAt {
		close(s.room)
		s.room = nil
	}
	s.mu.Unlock()
}
