package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// waiter is a JoinGroup or SyncGroup call waiting for its group. The
// coordinator answers it at most once, under its lock, after clearing
// the member's slot that held it; the caller abandons it, under the same
// lock, when its context ends. The channel is buffered, so answering
// never blocks.
type waiter[R any] struct {
	resp R // filled in by whoever answers
	done chan R
	m    *member
}

type (
	joinWaiter = waiter[*kmsg.JoinGroupResponse]
	syncWaiter = waiter[*kmsg.SyncGroupResponse]
)

func newWaiter[R any](m *member, resp R) *waiter[R] {
	return &waiter[R]{resp: resp, done: make(chan R, 1), m: m}
}

func (w *waiter[R]) answer() { w.done <- w.resp }

func joinSlot(m *member) **joinWaiter { return &m.join }
func syncSlot(m *member) **syncWaiter { return &m.sync }

// await waits for w's answer. When ctx ends first, w is taken out of
// its member's slot, unless the answer came meanwhile, and await
// returns w's unanswered response and false.
func await[R any](ctx context.Context, c *Coordinator, w *waiter[R], slot func(*member) **waiter[R]) (R, bool) {
	select {
	case r := <-w.done:
		return r, true
	case <-ctx.Done():
	}
	c.mu.Lock()
	if p := slot(w.m); *p == w {
		*p = nil
		w.m.lastSeen = c.cfg.Now()
		c.stats.Abandoned++
	}
	c.mu.Unlock()
	select {
	case r := <-w.done:
		return r, true
	default:
		return w.resp, false
	}
}
