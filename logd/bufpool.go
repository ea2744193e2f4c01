package logd

import (
	"math/bits"
	"sync"
)

// Buffer classes of the pool: powers of two from 4 KiB to 8 MiB.
const (
	minBufClass = 12
	maxBufClass = 23
	// maxPooledBytes bounds the memory the pool keeps for reuse.
	maxPooledBytes = 32 << 20
)

// bufPool recycles the connections' request, response and fetch buffers
// between requests, so that a connection holds no buffer while it waits
// for its next request and steady traffic does not allocate. It keeps
// buffers whose capacity is exactly a class size, up to maxPooledBytes
// together; anything else is left to the garbage collector.
type bufPool struct {
	mu    sync.Mutex
	free  [maxBufClass - minBufClass + 1][][]byte
	bytes int64
}

// classSize is the size of the smallest class that holds n bytes, or 0
// when n is larger than the largest class.
func classSize(n int) int {
	c := minBufClass
	if n > 1<<minBufClass {
		c = bits.Len(uint(n - 1))
	}
	if c > maxBufClass {
		return 0
	}
	return 1 << c
}

// get returns an empty buffer with capacity size: a pooled one when size
// is a class size and one is free, a new one otherwise.
func (p *bufPool) get(size int) []byte {
	if size == classSize(size) {
		i := bits.Len(uint(size)) - 1 - minBufClass
		p.mu.Lock()
		if k := len(p.free[i]); k > 0 {
			b := p.free[i][k-1]
			p.free[i][k-1] = nil
			p.free[i] = p.free[i][:k-1]
			p.bytes -= int64(size)
			p.mu.Unlock()
			return b
		}
		p.mu.Unlock()
	}
	return make([]byte, 0, size)
}

// put offers b for reuse; the caller must not use it afterwards.
func (p *bufPool) put(b []byte) {
	size := cap(b)
	if size == 0 || size != classSize(size) {
		return
	}
	i := bits.Len(uint(size)) - 1 - minBufClass
	p.mu.Lock()
	if p.bytes+int64(size) <= maxPooledBytes {
		p.free[i] = append(p.free[i], b[:0])
		p.bytes += int64(size)
	}
	p.mu.Unlock()
}
