package storage

import (
	"context"
	"fmt"
	"time"
)

// syncLoop is the group commit of FsyncAlways: each append kicks it,
// and one fdatasync covers every batch appended before it started, so
// appenders that arrive during an fsync share the next one.
func (l *Log) syncLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.done:
			return
		case <-l.kick:
		}
		l.sync()
	}
}

// sync makes everything appended so far durable: everything whose
// append had completed when it started. It takes only ackMu, never mu,
// so an append's write in progress does not hold the fsync back.
func (l *Log) sync() {
	l.ackMu.Lock()
	w, from, loads := l.written, l.durable, l.loads
	if l.failed != nil || l.closed || w.end <= from {
		l.ackMu.Unlock()
		return
	}
	l.ackMu.Unlock()

	start := time.Now()
	l.segMu.RLock()
	var err error
	if w.seg.log != nil {
		err = w.seg.log.Sync()
	}
	l.segMu.RUnlock()
	took := time.Since(start)

	if err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.loads == loads { // else fenced and reloaded meanwhile: see below
			l.fail(opFsync, err)
		}
		return
	}
	l.ackMu.Lock()
	defer l.ackMu.Unlock()
	if l.loads != loads {
		// Fenced and reloaded meanwhile (Unfence): seg is closed, and
		// its offsets were cut or checked again; this fsync counts for
		// nothing, its error included.
		return
	}
	if l.failed != nil {
		return // another fsync failed meanwhile: what this one covered is not known
	}
	w.seg.noteSynced(w.pos)
	l.markDurable(w.end)
	l.env.hooks.fsync(l.topic, l.partition, took, w.end-from)
}

// WaitDurable returns once every offset up to and including offset is
// durable by the fsync policy: under FsyncAlways when it is fsynced
// (sharing fsyncs with concurrent appenders); under FsyncInterval and
// FsyncNever at once. It returns ctx's error if ctx ends first,
// ErrLogFailed if an fsync failed, ErrClosed if the Log closed before
// the offset was made durable.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	return l.waitDurable(ctx, offset, -1)
}

// WaitAppended is WaitDurable for the batch of res, an Append's result
// (a duplicate's too: its original's offsets). It also fails, with
// ErrLogFailed, when the partition has been fenced and reloaded
// (Unfence) since that append: the reload cut what no fsync covered,
// later appends may have taken the batch's offsets, and their fsync
// says nothing of it. A producer told so retries; an idempotent one's
// retry is answered as a duplicate if the batch survived the cut.
func (l *Log) WaitAppended(ctx context.Context, res AppendResult) error {
	return l.waitDurable(ctx, res.LastOffset, res.loads)
}

// waitDurable is WaitDurable; with loads ≥ 0 it fails once the
// partition was loaded again since l.loads was loads.
func (l *Log) waitDurable(ctx context.Context, offset int64, loads int) error {
	for {
		l.ackMu.Lock()
		switch {
		case loads >= 0 && l.loads != loads:
			l.ackMu.Unlock()
			return fmt.Errorf("%w: %s/%d was fenced and reloaded since the batch was appended", ErrLogFailed, l.topic, l.partition)
		case l.durable > offset:
			l.ackMu.Unlock()
			return nil
		case l.failed != nil:
			err := l.failed
			l.ackMu.Unlock()
			return err
		case l.closed:
			l.ackMu.Unlock()
			return ErrClosed
		case l.env.fsync != FsyncAlways:
			l.ackMu.Unlock()
			return nil
		}
		if l.durableCh == nil {
			l.durableCh = make(chan struct{})
		}
		ch := l.durableCh
		l.ackMu.Unlock()
		select {
		case l.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Sync fsyncs what has been appended, whatever the policy; the
// FsyncInterval timer calls it.
func (l *Log) Sync() error {
	l.sync()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	if l.closed {
		return ErrClosed
	}
	return nil
}
