package zmq

import (
	"sync"
	"time"
)

// largeFrame is the size above which a frame's body must be reserved
// from its socket's pending budget before zmq4, which allocates a
// frame's whole announced length at its header, sees the header.
const largeFrame = readBufSize

// pendingBudget bounds, across a socket's connections, the bytes of
// large frames that were announced and whose body has not arrived yet:
// what a peer can make zmq4 allocate with a frame header alone.
type pendingBudget struct {
	mu    sync.Mutex
	left  int64
	freed broadcast
}

func newPendingBudget(n int) *pendingBudget { return &pendingBudget{left: int64(n)} }

// take reserves n bytes, waiting for them until deadline (false) or
// until cancel closes (false).
func (b *pendingBudget) take(n int64, deadline time.Time, cancel <-chan struct{}) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ch := b.freed.wait()
		b.mu.Lock()
		if b.left >= n {
			b.left -= n
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-cancel:
			return false
		}
	}
}

// give returns n bytes taken.
func (b *pendingBudget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
	b.freed.notify()
}

// available is what can be taken now.
func (b *pendingBudget) available() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}
