package groups

import "sync"

// commitLock orders one group's OffsetCommits: it is held from the
// check of the committer through the store's Commit, so a commit the
// store writes was valid when it was written, as Kafka checks and
// appends a commit under the group's lock. A member removed, or a
// generation ended, after the check cannot let a later commit be
// written before this one. Commits of different groups do not wait for
// each other. Locks are kept by group name (a group evicted from memory
// and made again is the same group to its offsets) and only while a
// commit holds or waits for them, so their number is bounded by the
// commits in flight.
type commitLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by Coordinator.mu
}

// lockCommits takes the group's commit lock, waiting for a commit of
// the same group in flight. It must not be called under c.mu.
func (c *Coordinator) lockCommits(group string) *commitLock {
	c.mu.Lock()
	l := c.commitLocks[group]
	if l == nil {
		l = new(commitLock)
		c.commitLocks[group] = l
	}
	l.refs++
	c.mu.Unlock()
	l.mu.Lock()
	return l
}

// unlockCommits releases a lock lockCommits returned.
func (c *Coordinator) unlockCommits(group string, l *commitLock) {
	l.mu.Unlock()
	c.mu.Lock()
	if l.refs--; l.refs == 0 {
		delete(c.commitLocks, group)
	}
	c.mu.Unlock()
}
