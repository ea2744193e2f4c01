package logd

import "sync"

// notifier wakes Fetch long-polls when a topic is created or the server
// closes; partitions' own Updated channels wake them when data becomes
// visible.
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
