package storage

import (
	"slices"
	"time"
)

// ApplyRetention deletes whole segments, oldest first, while the oldest
// is past RetentionAge (its newest timestamp older than now −
// RetentionAge) or the partition without it would still hold at least
// RetentionBytes. The active segment is never deleted. It does nothing
// unless the cleanup policy includes delete. The log start offset moves
// to the first segment kept.
func (l *Log) ApplyRetention(now time.Time) (deleted int, err error) {
	if !l.cfg.Cleanup.deletes() {
		return 0, nil
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.failed != nil {
		return 0, nil // fenced: Unfence first
	}
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	cut := now.UnixMilli() - l.cfg.RetentionAge.Milliseconds()
	for deleted < len(l.segs)-1 {
		s := l.segs[deleted]
		byAge := l.cfg.RetentionAge > 0 && s.maxTs >= 0 && s.maxTs < cut
		bySize := l.cfg.RetentionBytes >= 0 && total-s.size >= l.cfg.RetentionBytes
		if !byAge && !bySize {
			break
		}
		total -= s.size
		deleted++
	}
	if deleted == 0 {
		return 0, nil
	}
	l.segMu.Lock()
	victims := l.segs[:deleted]
	l.segs = slices.Clone(l.segs[deleted:])
	l.start.Store(l.segs[0].base)
	l.hints.reset()
	for _, s := range victims {
		if rerr := s.remove(); rerr != nil && err == nil {
			err = rerr
		}
	}
	l.segMu.Unlock()
	for _, s := range victims {
		l.env.logger.Info("storage: retention deleted a segment", "topic", l.topic, "partition", l.partition, "base", s.base, "bytes", s.size)
		l.env.hooks.segmentDelete(l.topic, l.partition, s.base, s.size)
	}
	if serr := l.env.fs.SyncDir(l.dir); err == nil {
		err = serr
	}
	return deleted, err
}
