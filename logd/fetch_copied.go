package logd

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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

// fitFetch returns the buffer resp's record sets, read into buf, are to
// be held in until written: buf when it is of their size class, else a
// buffer of that class they are moved into (buf going back to the
// pool), or nil, buf given back, when they are none. copiedBytes counts
// the bytes copied, not the buffer: without this an answer of one small
// batch held, unwritten, a buffer of the size the connection's largest
// earlier fetch needed (up to 8 MiB).
func (s *Server) fitFetch(resp *kmsg.FetchResponse, buf []byte) []byte {
	if len(buf) == 0 {
		s.bufs.put(buf)
		return nil
	}
	size := classSize(len(buf))
	if size == 0 || cap(buf) <= size {
		return buf // beyond the largest class, buf was made at its size
	}
	fit := s.bufs.get(size)
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			if len(p.RecordBatches) > 0 {
				start := len(fit)
				fit = append(fit, p.RecordBatches...)
				p.RecordBatches = fit[start:len(fit):len(fit)]
			}
		}
	}
	s.bufs.put(buf)
	return fit
}
