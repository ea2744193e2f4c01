package logd

import (
	"container/list"
	"sync"
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
//
// Fetches waiting for bytes are served first come, first served, as
// byteBudget's waiters: while some wait, only the first in line takes
// bytes (a fetch arriving later reads none and queues behind it), and
// bytes coming back wake only it; when it leaves the line (answered, or
// its read no longer cut) the next is woken. Without the line every
// waiter was woken at once and fetches arriving meanwhile took the
// bytes first, so one fetch could lose every time until its MaxWait.
// The first in line blocks the ones behind it, so a fetch of a large
// batch is not starved by a stream of small ones. Each waiter waits on
// its own fetch's goroutine: the line is a list of channels.
type copiedBytes struct {
	limit int64
	used  atomic.Int64

	mu   sync.Mutex
	line list.List // of *copyTurn, first come first
	// returns counts puts and departures of the first in line so far:
	// a wait that missed one (during its read, which found fewer bytes,
	// or none as not first) does not wait. Changed with mu held, read
	// without it (returned: every fetch, sendfile ones too, takes it).
	returns atomic.Uint64
}

// copyTurn is a fetch's place in copiedBytes' line.
type copyTurn struct {
	elem  *list.Element // nil: not in line; set and read by its fetch only
	ready chan struct{} // closed when the fetch, first in line, is to read again
}

// mayTake: turn (nil: a fetch not in line) may take bytes now: no one
// waits, or it is first in line. c.mu is held.
func (c *copiedBytes) mayTake(turn *copyTurn) bool {
	f := c.line.Front()
	return f == nil || turn != nil && f == turn.elem
}

// available is how many bytes turn may take now.
func (c *copiedBytes) available(turn *copyTurn) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mayTake(turn) {
		return 0
	}
	return c.limit - c.used.Load()
}

// take reserves n bytes for turn; false, taking nothing, past the limit
// or while others are before it in line.
func (c *copiedBytes) take(n int64, turn *copyTurn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mayTake(turn) || c.used.Load()+n > c.limit {
		return false
	}
	c.used.Add(n)
	return true
}

// put gives back n bytes and wakes the fetch first in line.
func (c *copiedBytes) put(n int64) {
	if n <= 0 {
		return
	}
	c.used.Add(-n)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.returns.Add(1)
	c.wakeFirst()
}

// wakeFirst wakes the fetch first in line. c.mu is held.
func (c *copiedBytes) wakeFirst() {
	if f := c.line.Front(); f != nil {
		if t := f.Value.(*copyTurn); t.ready != nil {
			close(t.ready)
			t.ready = nil
		}
	}
}

// returned is the count of puts and of departures of the first in line
// so far, taken before a read that may be cut (see wait). It takes no
// lock: every fetch calls it, those sent from files too. A put or leave
// counted after it is seen by wait; one counted before it, by the read
// (its bytes given back, or the line changed, before the count).
func (c *copiedBytes) returned() uint64 { return c.returns.Load() }

// wait puts turn in line (keeping its place if it is there already)
// and returns a channel closed when it is first in line and bytes come
// back, or at once when it is first and bytes came back, or the first
// left, since since (returned, before its read): a read while another
// was first found no bytes available.
func (c *copiedBytes) wait(turn *copyTurn, since uint64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if turn.elem == nil {
		turn.elem = c.line.PushBack(turn)
	}
	ready := make(chan struct{})
	turn.ready = ready
	if c.returns.Load() != since && c.line.Front() == turn.elem {
		c.wakeFirst()
	}
	return ready
}

// leave takes turn out of line, waking the next fetch when turn was
// first, and counting that in returns: the next may be between its read
// (which found nothing, not first) and its wait, its channel not yet
// made, so the wake alone would be missed. A turn not in line (every
// fetch not cut) takes no lock: only its own fetch sets turn.elem.
func (c *copiedBytes) leave(turn *copyTurn) {
	if turn.elem == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	first := c.line.Front() == turn.elem
	c.line.Remove(turn.elem)
	turn.elem, turn.ready = nil, nil
	if first {
		c.returns.Add(1)
		c.wakeFirst()
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
