package logd

import "sync/atomic"

// copiedBytes bounds the record bytes that Fetch answers hold in memory
// over all connections (Config.MaxCopiedFetchBytes): record sets read
// into a connection's fetch buffer, because the connection cannot send
// from files (TLS) or holds too many descriptors already (fetchFiles),
// held until the answer is written, for up to IdleTimeout when its
// client does not read. A fetch takes bytes as it reads them; one that
// finds the bound reached reads less (a partition is left empty rather
// than its first batch going past the bound) and, with nothing to
// answer, waits within its MaxWait for bytes to come back (freed).
type copiedBytes struct {
	limit int64
	used  atomic.Int64
	freed notifier
}

// available is how many bytes may be taken now.
func (c *copiedBytes) available() int64 { return c.limit - c.used.Load() }

// take reserves n bytes; false, taking nothing, past the limit.
func (c *copiedBytes) take(n int64) bool {
	for {
		u := c.used.Load()
		if u+n > c.limit {
			return false
		}
		if c.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// put gives back n bytes and wakes the fetches waiting for them.
func (c *copiedBytes) put(n int64) {
	if n > 0 {
		c.used.Add(-n)
		c.freed.wake()
	}
}
