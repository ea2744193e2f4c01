package pipe

import (
	"sync"
	"sync/atomic"
)

// acceptedQueue collects the tickets of the writes the destination
// accepted, from whichever goroutine its receipts come on, until the
// pipe next holds its lock (Pipe.lock) and gives them to the core all
// at once. A receipt so costs a short lock of its own instead of the
// pipe's, which the receiving goroutine holds for a batch of events at
// a time: receipts, one per message, no longer queue behind it. It
// holds at most the writes in flight (Config.MaxInFlight): a ticket is
// accepted once.
type acceptedQueue struct {
	// The padding keeps it off the cache lines of the pipe's other
	// fields (its lock above all), which the receiving goroutine
	// writes each time it takes events.
	_       [64]byte
	mu      sync.Mutex
	tickets []uint64
	n       atomic.Int32 // len(tickets), read without mu
	_       [64]byte
}

func (q *acceptedQueue) add(ticket uint64) {
	q.mu.Lock()
	q.tickets = append(q.tickets, ticket)
	q.n.Store(int32(len(q.tickets)))
	q.mu.Unlock()
}

// take returns the queued tickets, leaving spare (emptied) in their
// place for the next ones.
func (q *acceptedQueue) take(spare []uint64) []uint64 {
	q.mu.Lock()
	got := q.tickets
	q.tickets = spare[:0]
	q.n.Store(0)
	q.mu.Unlock()
	return got
}

// lock takes the pipe's lock and gives the core the receipts that came
// since it was last held. A receipt the core refuses (a destination
// that answered one write twice) fails the pipe, once unlock lets go.
func (p *Pipe) lock() {
	p.mu.Lock()
	p.applyReceipts()
}

// applyReceipts gives the core the receipts in acceptedQ; call it
// holding mu, and let go of it with unlock.
func (p *Pipe) applyReceipts() {
	p.spare = p.acceptedQ.take(p.spare)
	for _, t := range p.spare {
		if err := p.core.Done(t); err != nil && p.failed == nil {
			p.failed, p.failOnUnlock = err, true
		}
	}
}

// unlock lets go of the pipe's lock taken with lock.
func (p *Pipe) unlock() {
	failed := p.failOnUnlock
	p.failOnUnlock = false
	err := p.failed
	p.mu.Unlock()
	if failed {
		p.fail(err)
	}
}
