package zmq

import "sync"

// broadcast wakes every goroutine waiting for something to change. It
// costs nothing while no one waits.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next notify.
func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}
