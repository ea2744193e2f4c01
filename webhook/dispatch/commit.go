package dispatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/brokerless/brokerless/webhook/store"
)

// maxCommitBatch is the most completions written in one transaction, and
// maxCommitPending the most waiting to be written before a worker that
// finished an attempt waits for room.
const (
	maxCommitBatch   = 256
	maxCommitPending = 1024
)

// A writer with fewer than lingerBatch completions waiting first lets
// more gather, for up to lingerFor: a transaction's own cost (its begin,
// commit and log writes) was most of a completion's when each held a
// handful. No worker waits for its completion to be written, so this
// delays nothing but the record.
const (
	lingerBatch = 64
	lingerFor   = time.Millisecond
)

// A batch whose write fails (the database restarting, a connection
// lost) is written again, after retryFirst and then twice as long each
// time up to retryMax, while the dispatcher runs and the lease of one of
// its deliveries holds.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// committer writes completions in batches (group commit) behind the
// workers: a worker hands over its completion and goes on to its next
// attempt, and one writer goroutine at a time (counted in the
// dispatcher's WaitGroup) writes every completion waiting, in one
// transaction, until none is. The delivery stays leased until its
// completion is written, so no claim takes it meanwhile; a completion
// lost to a crash, or not written before its lease ran out, only means
// the delivery is attempted again.
type committer struct {
	d       *Dispatcher
	mu      sync.Mutex
	room    sync.Cond // signalled when pending shrinks
	writing bool
	pending []toWrite
	// full is signalled (without blocking) when lingerBatch are pending.
	full chan struct{}
}

// toWrite is a completion to write, and when its lease ends by the
// dispatcher's clock (its claim's time + Lease). Its LeaseUntil is by
// the store's clock, the server's on PostgreSQL, which may differ.
type toWrite struct {
	c     *store.Completion
	until time.Time
	// exhausted: the attempt was the last of the schedule it was on
	// (counted in Stats.Exhausted if it leaves the delivery failed).
	exhausted bool
}

func (cm *committer) init(d *Dispatcher) {
	cm.d = d
	cm.room.L = &cm.mu
	cm.full = make(chan struct{}, 1)
}

// submit queues w for writing, waiting while maxCommitPending are
// queued. The caller is counted in d.wg (so the writer's wg.Add is safe).
func (cm *committer) submit(ctx context.Context, w toWrite) {
	cm.mu.Lock()
	for len(cm.pending) >= maxCommitPending {
		cm.room.Wait()
	}
	cm.pending = append(cm.pending, w)
	if len(cm.pending) == lingerBatch {
		select {
		case cm.full <- struct{}{}:
		default:
		}
	}
	if !cm.writing {
		cm.writing = true
		cm.d.wg.Add(1)
		go cm.write(ctx)
	}
	cm.mu.Unlock()
}

// write writes batches until nothing is pending. ctx is the
// dispatcher's: once it is done a failed write is not tried again (the
// writes themselves are not cancelled).
func (cm *committer) write(ctx context.Context) {
	defer cm.d.wg.Done()
	linger := time.NewTimer(lingerFor)
	defer linger.Stop()
	cm.mu.Lock()
	for len(cm.pending) > 0 {
		if len(cm.pending) < lingerBatch {
			cm.mu.Unlock()
			select {
			case <-cm.full:
			case <-linger.C:
			}
			cm.mu.Lock()
		}
		batch := cm.pending[:min(len(cm.pending), maxCommitBatch)]
		cm.pending = cm.pending[len(batch):]
		if len(cm.pending) == 0 {
			cm.pending = nil
		}
		cm.room.Broadcast()
		cm.mu.Unlock()
		cm.writeBatch(ctx, batch)
		linger.Reset(lingerFor)
		cm.mu.Lock()
	}
	cm.writing = false
	cm.mu.Unlock()
}

// writeBatch writes batch, again after a failure while ctx is not done
// and one of its leases holds: written after the lease, a completion is
// still recorded unless the delivery was claimed again meanwhile (then
// it is refused, and the claim's attempt is recorded instead). Writing
// again is harmless: a completion already written no longer holds its
// lease, and is refused. The leases are measured by the dispatcher's
// clock (from their claims): with their LeaseUntil, by PostgreSQL's
// clock, a dispatcher whose clock ran ahead of the server's by more than
// a lease gave up at once.
func (cm *committer) writeBatch(ctx context.Context, pending []toWrite) {
	var until time.Time
	batch := make([]*store.Completion, len(pending))
	for i, w := range pending {
		batch[i] = w.c
		if w.until.After(until) {
			until = w.until
		}
	}
	wait := retryFirst
	for {
		err := cm.d.cfg.Store.Complete(context.WithoutCancel(ctx), batch...)
		if err == nil || errors.Is(err, store.ErrLeaseLost) || ctx.Err() != nil || !cm.d.cfg.Now().Before(until) {
			cm.d.recorded(pending, err)
			return
		}
		cm.d.stats.storeErrors.Add(1)
		cm.d.cfg.Logger.Warn("webhook dispatcher: recording attempts, trying again", "attempts", len(batch), "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		wait = min(2*wait, retryMax)
	}
}

// recorded counts the outcome of writing batch (an exhausted delivery
// once its completion left it failed). A delivery resent
// while its attempt ran is due once its completion is written: the
// dispatcher, which found it leased when the resend woke it, looks again
// at once rather than at its next poll.
func (d *Dispatcher) recorded(batch []toWrite, err error) {
	resent := false
	d.mu.Lock()
	for _, w := range batch {
		c := w.c
		if ep := d.endpoints[c.Attempt.EndpointID]; c.Disable != "" && ep != nil && ep.disabling > 0 {
			ep.disabling--
			ep.staleUpTo = d.polls
		}
	}
	d.mu.Unlock()
	written := err == nil || errors.Is(err, store.ErrLeaseLost)
	for _, w := range batch {
		c := w.c
		resent = resent || c.Resent && !c.LeaseLost && written
		if c.Disabled && !c.LeaseLost && written {
			d.stats.disabled.Add(1)
			d.cfg.Logger.Warn("webhook dispatcher: endpoint disabled", "endpoint", c.Attempt.EndpointID, "reason", c.Disable)
		}
		if w.exhausted && c.Failed && !c.LeaseLost && written {
			d.stats.exhausted.Add(1)
		}
		if c.LeaseLost {
			d.stats.leaseLost.Add(1)
			d.cfg.Logger.Warn("webhook dispatcher: lease lost before the attempt was recorded", "delivery", c.Attempt.DeliveryID)
		}
	}
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		// The leases expire and the deliveries are attempted again: at least once.
		d.stats.storeErrors.Add(1)
		d.cfg.Logger.Warn("webhook dispatcher: recording attempts", "attempts", len(batch), "err", err)
	}
	if resent {
		d.Notify()
	}
}
