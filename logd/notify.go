package logd

import "sync"

// notifier wakes Fetch long-polls when anything is appended. One for the
// whole server: a single node's fetchers re-check their partitions,
// which is cheap, and none misses a wake-up.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed by the next wake.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) wake() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
