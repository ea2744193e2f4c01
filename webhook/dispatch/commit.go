package dispatch

import (
	"context"
	"sync"

	"github.com/brokerless/brokerless/webhook/store"
)

// maxCommitBatch is the most completions written in one transaction.
const maxCommitBatch = 256

// committer writes completions in batches (group commit): the first
// attempt to finish writes its own completion and those of every attempt
// that finishes while it writes, in one transaction, until none is
// waiting. No goroutine of its own.
type committer struct {
	st      store.Store
	mu      sync.Mutex
	writing bool
	pending []*commitReq
}

type commitReq struct {
	c    *store.Completion
	done chan error
}

// commit writes c, in a batch with others, and returns the batch's error.
// c.LeaseLost says whether c was recorded.
func (cm *committer) commit(ctx context.Context, c *store.Completion) error {
	r := &commitReq{c: c, done: make(chan error, 1)}
	cm.mu.Lock()
	cm.pending = append(cm.pending, r)
	if cm.writing {
		cm.mu.Unlock()
		return <-r.done
	}
	cm.writing = true
	for len(cm.pending) > 0 {
		batch := cm.pending[:min(len(cm.pending), maxCommitBatch)]
		cm.pending = cm.pending[len(batch):]
		cm.mu.Unlock()
		cs := make([]*store.Completion, len(batch))
		for i, b := range batch {
			cs[i] = b.c
		}
		err := cm.st.Complete(ctx, cs...)
		for _, b := range batch {
			b.done <- err
		}
		cm.mu.Lock()
	}
	cm.writing = false
	cm.mu.Unlock()
	return <-r.done
}
