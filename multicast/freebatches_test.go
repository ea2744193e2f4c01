package multicast

import (
	"context"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestFreeBatchesLastFreedFirst: the batch freed last is taken first;
// no more wait than were allowed; take waits for a put, and gives up
// when stop closes.
func TestFreeBatchesLastFreedFirst(t *testing.T) {
	f := newFreeBatches(2)
	a, b, c := newBatch(), newBatch(), newBatch()
	a.events = append(a.events, transport.Event{Kind: transport.EventMessage})
	f.put(a)
	f.put(b)
	f.put(c) // beyond the two that may wait: dropped
	if f.len() != 2 || f.cap() != 2 {
		t.Fatalf("%d of %d wait, want 2 of 2", f.len(), f.cap())
	}
	if got := f.tryTake(); got != b {
		t.Fatal("the batch freed first was taken before the one freed last")
	}
	if got := f.tryTake(); got != a || len(got.events) != 0 {
		t.Fatalf("second take: the first batch, reset, want; got events %d", len(got.events))
	}
	if f.tryTake() != nil {
		t.Fatal("a batch taken from an empty free list")
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		f.put(c)
	}()
	if got := f.take(nil); got != c {
		t.Fatal("take did not wait for the batch put")
	}
	stop := make(chan struct{})
	close(stop)
	if f.take(stop) != nil {
		t.Fatal("take returned a batch from an empty free list after stop")
	}
}

// TestSubscriberKeepsItsBatchesWarm: an application that keeps up is
// handed the same few batches again and again, not each of the Queue+1
// in turn (each of which would be cold in the caches by its turn).
func TestSubscriberKeepsItsBatchesWarm(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[*batch]bool{}
	const rounds, per = 200, 20
	for r := range rounds {
		for range per {
			if err := p.Publish(ctx, transport.Message{Payload: []byte("tick")}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < per; {
			ev, err := s.Receive(ctx)
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			if ev.Kind == transport.EventMessage {
				got++
			}
			seen[s.cur] = true
		}
	}
	// Two in turn while the application reads for itself. While it
	// publishes, the reader goroutine may read in its place and hand
	// over a batch a read, up to one a datagram of the round's (per at
	// most, on a loaded machine: 16 seen under -race with every package
	// testing at once), which the stack then keeps in use. Taken in
	// turn, all Queue+1 (65) came round.
	if max := 2 * per; len(seen) > max {
		t.Fatalf("the application was handed %d different batches over %d rounds, each read as it came: want at most %d (of %d)", len(seen), rounds, max, s.free.cap())
	}
}
