package kafka

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/brokerless/brokerless/transport"
)

// slots counts the free places in the client's record buffer, so that a
// Publisher waits for room itself, honouring its context, and kgo's
// Produce never blocks. A publish takes as many places as it has
// records (all that are free, when fewer: it produces those and takes
// again), and each record's promise gives its place back: one atomic
// addition, unless a publish waits. A publish that finds none free
// waits until a sixteenth of the buffer is free, so that a publisher
// held back by a full buffer wakes once for many records, not once a
// record.
type slots struct {
	size    int64 // the places there are, free when no record is out
	free    atomic.Int64
	waiting atomic.Bool // a take waits (set and cleared holding mu)
	wakeAt  int64       // the free places that wake a waiting take

	mu   sync.Mutex
	room chan struct{} // closed when free reaches wakeAt; nil when none waits
}

func newSlots(n int) *slots {
	s := &slots{size: int64(n), wakeAt: int64(max(1, n/16))}
	s.free.Store(int64(n))
	return s
}

// take takes at least one and at most n places, waiting while none is
// free; it fails when ctx ends or closing is closed first.
func (s *slots) take(ctx context.Context, closing <-chan struct{}, n int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for {
		if f := s.free.Load(); f > 0 {
			k := min(f, int64(n))
			if !s.free.CompareAndSwap(f, f-k) {
				continue
			}
			// Checked after the places are taken: either drain, which
			// runs after closing is closed, sees them taken and waits
			// for their records, or this sees closing closed.
			select {
			case <-closing:
				s.put(int(k))
				return 0, transport.ErrClosed
			default:
			}
			return int(k), nil
		}
		room := s.wait(1)
		if room == nil {
			continue // a put saw no waiter: take it now
		}
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
	if f := s.free.Add(int64(n)); f < s.wakeAt || !s.waiting.Load() {
		return
	}
	s.mu.Lock()
	if s.room != nil && s.free.Load() >= s.wakeAt {
		close(s.room)
		s.room = nil
		s.waiting.Store(false)
	}
	s.mu.Unlock()
}

// drain waits until every place is free again — the promise of every
// record taken a place for has run — or ctx ends. closing must be
// closed first, so that no take succeeds meanwhile (see take).
func (s *slots) drain(ctx context.Context) error {
	for {
		if s.free.Load() == s.size {
			return nil
		}
		room := s.wait(s.size)
		if room == nil {
			return nil
		}
		// A put wakes a waiter once wakeAt places are free, and every
		// put after that while one waits: the last put wakes this.
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wait registers a waiter and returns the channel that the put freeing
// wakeAt places (or any put after that while one waits) closes, or nil
// if need places are free already: checked holding mu after the
// registration, so that a put which saw no waiter is not missed.
func (s *slots) wait(need int64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting.Store(true)
	if s.free.Load() >= need {
		if s.room == nil { // nor does anyone else wait
			s.waiting.Store(false)
		}
		return nil
	}
	if s.room == nil {
		s.room = make(chan struct{})
	}
	return s.room
}
