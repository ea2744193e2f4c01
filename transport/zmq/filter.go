package zmq

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// prefixFilter is a subscriber's own set of topic prefixes: as libzmq's
// SUB does, it delivers only the messages whose first frame one of them
// begins, whatever a publisher sends. Changes come from the application
// (Subscribe, Unsubscribe), not from the network.
type prefixFilter struct {
	mu     sync.Mutex
	counts map[string]int // a prefix subscribed twice is counted twice
	// prefixes is a snapshot of counts' keys, read without a lock; all
	// says "" (every topic) is among them.
	prefixes atomic.Pointer[[][]byte]
	all      atomic.Bool
}

func newPrefixFilter(prefixes []string) *prefixFilter {
	f := &prefixFilter{counts: map[string]int{}}
	for _, p := range prefixes {
		f.counts[p]++
	}
	f.snapshot()
	return f
}

// change adds prefix, or with add false removes one count of it.
func (f *prefixFilter) change(prefix string, add bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.counts[prefix]
	switch {
	case add:
		f.counts[prefix] = n + 1
	case n == 0:
		return
	case n > 1:
		f.counts[prefix] = n - 1
	default:
		delete(f.counts, prefix)
	}
	if add && n == 0 || !add && n == 1 {
		f.snapshot()
	}
}

// snapshot publishes the set, under f.mu (or before f is shared).
func (f *prefixFilter) snapshot() {
	_, all := f.counts[""]
	snap := make([][]byte, 0, len(f.counts))
	for p := range f.counts {
		snap = append(snap, []byte(p))
	}
	f.prefixes.Store(&snap)
	f.all.Store(all)
}

// match reports whether a prefix of the set begins topic.
func (f *prefixFilter) match(topic []byte) bool {
	if f.all.Load() {
		return true
	}
	for _, p := range *f.prefixes.Load() {
		if bytes.HasPrefix(topic, p) {
			return true
		}
	}
	return false
}
