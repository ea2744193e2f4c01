package storage

import (
	"context"
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

// sync makes everything appended so far durable.
func (l *Log) sync() {
	l.mu.Lock()
	if l.failed != nil || l.closed || l.end <= l.durable {
		l.mu.Unlock()
		return
	}
	target, from, loads := l.end, l.durable, l.loads
	seg := l.segs[len(l.segs)-1]
	pos := seg.size
	l.mu.Unlock()

	start := time.Now()
	l.segMu.RLock()
	var err error
	if seg.log != nil {
		err = seg.log.Sync()
	}
	l.segMu.RUnlock()
	took := time.Since(start)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loads != loads {
		// Fenced and reloaded meanwhile (Unfence): seg is closed, and
		// its offsets were cut or checked again; this fsync counts for
		// nothing, its error included.
		return
	}
	if err != nil {
		l.fail(opFsync, err)
		return
	}
	if l.failed != nil {
		return // another fsync failed meanwhile: what this one covered is not known
	}
	seg.synced = max(seg.synced, pos)
	if pos > seg.visible.Load() {
		seg.visible.Store(pos)
	}
	l.markDurable(target)
	l.env.hooks.fsync(l.topic, l.partition, took, target-from)
}

// WaitDurable returns once every offset up to and including offset is
// durable by the fsync policy: under FsyncAlways when it is fsynced
// (sharing fsyncs with concurrent appenders); under FsyncInterval and
// FsyncNever at once. It returns ctx's error if ctx ends first,
// ErrLogFailed if an fsync failed, ErrClosed if the Log closed before
// the offset was made durable.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	for {
		l.mu.Lock()
		switch {
		case l.durable > offset:
			l.mu.Unlock()
			return nil
		case l.failed != nil:
			err := l.failed
			l.mu.Unlock()
			return err
		case l.closed:
			l.mu.Unlock()
			return ErrClosed
		case l.env.fsync != FsyncAlways:
			l.mu.Unlock()
			return nil
		}
		if l.durableCh == nil {
			l.durableCh = make(chan struct{})
		}
		ch := l.durableCh
		l.mu.Unlock()
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
