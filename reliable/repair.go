package reliable

import (
	"math"
	"net/netip"
	"time"
)

// repairJob asks for the datagram whose first sequence is first to be
// sent again because asker NACKed it: to the group, or to asker alone
// when unicast is set.
type repairJob struct {
	first   uint64
	asker   netip.AddrPort
	unicast bool
}

// ring is a bounded FIFO.
type ring[T any] struct {
	buf        []T
	head, size int
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) push(v T) bool {
	if r.size == len(r.buf) {
		return false
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
	return true
}

func (r *ring[T]) peek() *T { return &r.buf[r.head] }

func (r *ring[T]) pop() {
	r.head = (r.head + 1) % len(r.buf)
	r.size--
}

// packetQueue is a bounded FIFO of small datagrams whose buffers are
// reused.
type packetQueue struct {
	q ring[[]byte]
}

func newPacketQueue(n, size int) packetQueue {
	pq := packetQueue{q: newRing[[]byte](n)}
	for i := range pq.q.buf {
		pq.q.buf[i] = make([]byte, 0, size)
	}
	return pq
}

// slot returns the buffer to fill for the next packet, or nil when full;
// push commits it.
func (pq *packetQueue) slot() []byte {
	if pq.q.size == len(pq.q.buf) {
		return nil
	}
	return pq.q.buf[(pq.q.head+pq.q.size)%len(pq.q.buf)][:0]
}

func (pq *packetQueue) push(b []byte) { pq.q.push(b) }

func (pq *packetQueue) len() int { return pq.q.size }

// pop copies the oldest packet into dst and removes it.
func (pq *packetQueue) pop(dst []byte) int {
	n := copy(dst, *pq.q.peek())
	pq.q.pop()
	return n
}

// tokenBucket rate-limits repair bytes.
type tokenBucket struct {
	rate   float64 // bytes per second
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate int64, burst int, now time.Time) tokenBucket {
	return tokenBucket{rate: float64(rate), burst: float64(burst), tokens: float64(burst), last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// take spends n tokens if there are enough.
func (b *tokenBucket) take(now time.Time, n int) bool {
	b.refill(now)
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}

// ready is when n tokens will be available.
func (b *tokenBucket) ready(now time.Time, n int) time.Time {
	b.refill(now)
	short := float64(n) - b.tokens
	if short <= 0 {
		return now
	}
	// Rounded up: a wait rounded down to nothing would find the bucket
	// still short, and the caller would spin.
	return now.Add(time.Duration(math.Ceil(short / b.rate * float64(time.Second))))
}
