package logd

import (
	"errors"
	"testing"
	"time"
)

// TestByteBudget: acquisitions within the limit pass at once; a larger
// one waits, first come first served, until bytes are released; a wait
// that reaches its deadline gets nothing and lets the next waiter in.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	far := time.Now().Add(time.Minute)
	if err := b.acquire(60, far, nil); err != nil {
		t.Fatal(err)
	}
	// A 50-byte wait that expires, then a 40-byte one behind it.
	if err := b.acquire(50, time.Now().Add(20*time.Millisecond), nil); !errors.Is(err, errNoMemory) {
		t.Fatalf("acquire past the limit: %v, want errNoMemory", err)
	}
	if err := b.acquire(40, far, nil); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 2)
	go func() { got <- b.acquire(30, far, nil) }()
	waitUntil(t, "a waiter", func() bool { return b.stats().waiting == 1 })
	go func() { got <- b.acquire(1, far, nil) }() // fits, but queues behind the first
	waitUntil(t, "two waiters", func() bool { return b.stats().waiting == 2 })
	select {
	case err := <-got:
		t.Fatalf("a waiter passed the queue: %v", err)
	default:
	}
	b.release(60)
	for range 2 {
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	st := b.stats()
	if st.used != 71 || st.waits != 3 || st.expired != 1 || st.waiting != 0 {
		t.Fatalf("stats %+v, want used 71, waits 3, expired 1", st)
	}
	done := make(chan struct{})
	close(done)
	if err := b.acquire(30, far, done); !errors.Is(err, errNoMemory) {
		t.Fatalf("acquire on a closed server: %v", err)
	}
	b.release(71)
	if st := b.stats(); st.used != 0 {
		t.Fatalf("used %d after releasing everything", st.used)
	}
}

func TestBufPool(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {1 << 23, 1 << 23}, {1<<23 + 1, 0}} {
		if got := classSize(c.n); got != c.want {
			t.Errorf("classSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	var p bufPool
	b := p.get(8192)
	if len(b) != 0 || cap(b) != 8192 {
		t.Fatalf("get(8192): len %d cap %d", len(b), cap(b))
	}
	p.put(append(b, 1, 2, 3))
	if again := p.get(8192); cap(again) != 8192 || &again[:1][0] != &b[:1][0] {
		t.Fatal("a pooled buffer was not reused")
	}
	p.put(make([]byte, 5000)) // not a class size: dropped
	p.put(make([]byte, 0, 1<<24))
	if p.bytes != 0 {
		t.Fatalf("pool keeps %d bytes of odd-sized buffers", p.bytes)
	}
	for range maxPooledBytes/(8<<20) + 4 {
		p.put(make([]byte, 0, 8<<20))
	}
	if p.bytes > maxPooledBytes {
		t.Fatalf("pool keeps %d bytes, bound %d", p.bytes, maxPooledBytes)
	}
}
