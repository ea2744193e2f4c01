package faultnet

import (
	"net"
	"net/netip"
	"time"
)

// held is one datagram waiting in a dueQueue.
type held struct {
	due  time.Time
	seq  uint64 // arrival order, breaks ties between equal due times
	buf  []byte
	addr net.Addr       // the source, for an Injector
	from netip.AddrPort // the source, for a Filter
}

func (a *held) before(b *held) bool {
	if a.due.Equal(b.due) {
		return a.seq < b.seq
	}
	return a.due.Before(b.due)
}

// dueQueue is a binary min-heap of held datagrams ordered by due time,
// then arrival. It is hand-written rather than container/heap so that
// pushing and popping do not box values and allocate.
type dueQueue struct {
	h     []held
	bytes int // sum of len(buf) of the held datagrams
}

func (q *dueQueue) len() int { return len(q.h) }

func (q *dueQueue) peek() *held { return &q.h[0] }

func (q *dueQueue) push(e held) {
	q.bytes += len(e.buf)
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !q.h[i].before(&q.h[parent]) {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

func (q *dueQueue) pop() held {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h[last] = held{} // let the GC have the address
	q.h = q.h[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < last && q.h[l].before(&q.h[small]) {
			small = l
		}
		if r < last && q.h[r].before(&q.h[small]) {
			small = r
		}
		if small == i {
			break
		}
		q.h[i], q.h[small] = q.h[small], q.h[i]
		i = small
	}
	q.bytes -= len(top.buf)
	return top
}

// bufPool recycles datagram copies so that a steady flow of datagrams
// does not allocate. What it keeps is bounded by maxBytes of capacity.
type bufPool struct {
	free     [][]byte
	bytes    int // capacity of the buffers in free
	maxBytes int
}

// copyOf returns a copy of b, in a recycled buffer when one is free.
func (p *bufPool) copyOf(b []byte) []byte {
	var buf []byte
	if n := len(p.free); n > 0 {
		buf = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.bytes -= cap(buf)
	}
	return append(buf, b...)
}

// put gives buf back for reuse.
func (p *bufPool) put(buf []byte) {
	if buf == nil || p.bytes+cap(buf) > p.maxBytes {
		return
	}
	p.free = append(p.free, buf[:0])
	p.bytes += cap(buf)
}
