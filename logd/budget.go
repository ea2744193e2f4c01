package logd

import (
	"container/list"
	"errors"
	"sync"
	"time"
)

// errNoMemory: a connection waited for request memory until its request
// deadline (or the server closed) without getting it.
var errNoMemory = errors.New("logd: no request memory before the request deadline")

// byteBudget is a semaphore of bytes: the memory every connection's
// request frame may hold, all together (Kafka's queued.max.request.bytes).
// A connection acquires bytes as its frame grows and releases them once
// the request is answered; one that cannot get them waits, first come
// first served, until its deadline.
type byteBudget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	waiters list.List // of *budgetWaiter, oldest first
	waits   uint64    // acquisitions that had to wait
	expired uint64    // waits that ended without the bytes
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once the bytes are granted
}

func newByteBudget(limit int64) *byteBudget { return &byteBudget{limit: limit} }

// acquire takes n bytes, waiting while others hold them, until deadline
// or until done is closed; then it returns errNoMemory and holds nothing.
// n must not exceed the limit.
func (b *byteBudget) acquire(n int64, deadline time.Time, done <-chan struct{}) error {
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.used+n <= b.limit {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.waits++
	b.mu.Unlock()

	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-w.ready:
		return nil
	case <-t.C:
	case <-done:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while timing out: give it back
		b.used -= n
	default:
		b.waiters.Remove(elem)
	}
	b.expired++
	b.grant()
	return errNoMemory
}

// release returns n bytes and wakes the waiters they now satisfy.
func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant hands bytes to waiters in arrival order while they fit. The
// oldest waiter blocks the ones behind it, so a large frame is not
// starved by a stream of small ones.
func (b *byteBudget) grant() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*budgetWaiter)
		if b.used+w.n > b.limit {
			return
		}
		b.used += w.n
		b.waiters.Remove(e)
		close(w.ready)
	}
}

// budgetStats is a snapshot for /metrics.
type budgetStats struct {
	limit, used    int64
	waiting        int
	waits, expired uint64
}

func (b *byteBudget) stats() budgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return budgetStats{limit: b.limit, used: b.used, waiting: b.waiters.Len(), waits: b.waits, expired: b.expired}
}
