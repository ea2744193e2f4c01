package multicast

import "sync"

// freeBatches holds the batches the application is done with until the
// reader fills them again, the most recently freed first.
//
// A subscriber makes Queue+1 batches (15 MiB by default) so that a slow
// application can fall that far behind; one that keeps up uses two at a
// time: the one it reads and the one being filled. Taken oldest first,
// as a channel gives them, every batch came round in turn, each one
// gone from the core's caches when filled again. Taken last freed
// first, the two batches in use stay warm and the rest wait, mapped,
// for a backlog. (On the 2-core VM this was written on, whose 32 MiB
// L3 holds all 15 MiB, it made no difference that BenchmarkLimit could
// see; reused at once, a batch also shows at once an application that
// keeps a Receive's slices past the next one.)
type freeBatches struct {
	mu    sync.Mutex
	stack []*batch      // its capacity is how many may wait
	avail chan struct{} // one token once a batch is put, for take
}

func newFreeBatches(n int) *freeBatches {
	return &freeBatches{stack: make([]*batch, 0, n), avail: make(chan struct{}, 1)}
}

// put adds b, reset, unless as many batches as may wait are there
// already (spare made b beyond them): b is then left to the garbage
// collector.
func (f *freeBatches) put(b *batch) {
	b.reset()
	f.mu.Lock()
	if len(f.stack) == cap(f.stack) {
		f.mu.Unlock()
		return
	}
	f.stack = append(f.stack, b)
	f.mu.Unlock()
	select {
	case f.avail <- struct{}{}:
	default:
	}
}

// tryTake returns the batch freed last, or nil when none waits.
func (f *freeBatches) tryTake() *batch {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.stack)
	if n == 0 {
		return nil
	}
	b := f.stack[n-1]
	f.stack[n-1] = nil
	f.stack = f.stack[:n-1]
	return b
}

// take returns the batch freed last, waiting for one to be put; it
// returns nil when stop closes first.
func (f *freeBatches) take(stop <-chan struct{}) *batch {
	for {
		if b := f.tryTake(); b != nil {
			return b
		}
		select {
		case <-f.avail:
		case <-stop:
			return nil
		}
	}
}

// len returns how many batches wait.
func (f *freeBatches) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stack)
}

// cap returns how many batches may wait.
func (f *freeBatches) cap() int { return cap(f.stack) }
