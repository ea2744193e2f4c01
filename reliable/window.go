package reliable

import (
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/transport/pretouch"
)

// sent is one datagram in the sender's retransmit window.
type sent struct {
	buf        []byte // the encoded datagram; cap is the MTU
	first      uint64 // sequence number of its first frame
	count      int    // frames
	total      int    // the window's total once this datagram closed
	lastRepair time.Time
	askedBy    netip.AddrPort // the receiver whose NACK caused lastRepair
	queued     bool           // waiting in the multicast repair queue
}

func (d *sent) last() uint64 { return d.first + uint64(d.count) - 1 }

// window is the ring of datagrams a Sender keeps: the oldest ones are
// sent and kept for repair; the newest `unsent` ones still wait for the
// network; one more slot past them is the open datagram being filled.
//
// The datagrams' bytes lie back to back in one arena, used as a ring: a
// datagram takes its length, not an MTU, and the arena is one
// allocation. Before, each slot had a buffer of its own, of MTU bytes,
// made the first time the slot was used: a new publisher allocated one
// per datagram for its first WindowDatagrams datagrams (16,384 by
// default, 23 MB, where datagrams of one small message use 110 bytes),
// and those first-touch page faults and the collections they caused
// fell on Publish (TestWindowArena, BenchmarkLatency).
//
// The arena holds the byte bound of the window plus one MTU, which is
// always enough: open makes room for the new datagram (bytes + MTU ≤
// the bound) before it takes arena space, and what it keeps is then at
// most the bound less an MTU. If the held bytes are one run [old, tail)
// and the MTU does not fit after tail, the datagrams start over at 0,
// where old > arena − MTU − held ≥ MTU bytes are free. If the held
// bytes wrap, the free run [tail, old) is the arena less the held bytes
// less the unused end (under an MTU): more than an MTU.
//
// newWindow makes the slots and the arena at once and touches every
// page of them (package pretouch), as Aeron pre-touches its term buffers: the
// kernel then maps them when the Sender is made, not one page fault at
// a time under Publish during a feed's first WindowBytes. Before, the
// first pass through a 16 MiB window cost BenchmarkLimit a fifth of its
// rate (ours 0.86 of raw, 1.08 with the window and the subscriber's
// batches touched first, the same run).
type window struct {
	slots    []sent
	arena    []byte // the datagrams' bytes
	tail     int    // arena offset where the next datagram opens
	head     int    // index of the oldest closed datagram
	n        int    // closed datagrams held
	unsent   int    // the newest closed datagrams not yet handed out
	bytes    int    // bytes of the closed datagrams
	total    int    // bytes of every datagram ever closed (sent.total)
	maxBytes int
	mtu      int
}

func newWindow(datagrams, maxBytes, mtu int) window {
	w := window{slots: make([]sent, datagrams), maxBytes: maxBytes, mtu: mtu}
	w.arena = make([]byte, min(maxBytes, datagrams*mtu)+mtu)
	pretouch.Slice(w.arena)
	pretouch.Slice(w.slots)
	return w
}

func (w *window) at(i int) *sent { return &w.slots[(w.head+i)%len(w.slots)] }

// open returns the slot past the closed datagrams, evicting the oldest
// sent datagrams to make room for one more of up to MTU bytes. It
// returns nil when only unsent datagrams could be evicted.
func (w *window) open() *sent {
	for w.n >= len(w.slots) || w.bytes+w.mtu > w.maxBytes {
		if w.n == w.unsent {
			return nil
		}
		w.evict()
	}
	if w.n == 0 || w.tail+w.mtu > len(w.arena) {
		w.tail = 0
	}
	d := w.at(w.n)
	d.buf, d.count, d.queued = w.arena[w.tail:w.tail:w.tail+w.mtu], 0, false
	return d
}

func (w *window) evict() {
	d := w.at(0)
	w.bytes -= len(d.buf)
	w.head = (w.head + 1) % len(w.slots)
	w.n--
}

// close adds the open slot to the closed datagrams, unsent.
func (w *window) close() {
	d := w.at(w.n)
	w.tail += len(d.buf)
	w.bytes += len(d.buf)
	w.total += len(d.buf)
	d.total = w.total
	w.n++
	w.unsent++
}

// canOpen reports whether k more datagrams can be opened, one after the
// other, evicting only sent datagrams that end before keep.
func (w *window) canOpen(k int, keep uint64) bool {
	n, bytes := w.n, w.bytes
	for i := 0; n+k > len(w.slots) || bytes+k*w.mtu > w.maxBytes; i++ {
		if i >= w.n-w.unsent || w.at(i).last() >= keep {
			return false
		}
		bytes -= len(w.at(i).buf)
		n--
	}
	return true
}

// sentFrom is the bytes of the sent datagrams from the one holding seq
// on: what a receiver that needs seq next has yet to take. All of them
// when seq is older than the window.
func (w *window) sentFrom(seq uint64) int {
	sent := w.n - w.unsent
	lo, hi := 0, sent
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if w.at(mid).last() < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == sent {
		return 0
	}
	d := w.at(lo)
	return w.at(sent-1).total - (d.total - len(d.buf))
}

// takeUnsent returns the oldest unsent datagram and marks it sent.
func (w *window) takeUnsent() *sent {
	d := w.at(w.n - w.unsent)
	w.unsent--
	return d
}

// low is the oldest sequence number held, or next when empty.
func (w *window) low(next uint64) uint64 {
	if w.n == 0 {
		return next
	}
	return w.at(0).first
}

// find returns the index of the sent datagram holding seq, or -1.
func (w *window) find(seq uint64) int {
	lo, hi := 0, w.n-w.unsent
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if w.at(mid).last() < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < w.n-w.unsent && w.at(lo).first <= seq {
		return lo
	}
	return -1
}
