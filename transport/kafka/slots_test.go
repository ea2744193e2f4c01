package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestSlots: a take gets what is free, up to what it asks; one that
// finds nothing free waits until a sixteenth of the buffer is back, not
// for each place; it ends with its context or the publisher's close.
func TestSlots(t *testing.T) {
	ctx := context.Background()
	never := make(chan struct{})
	s := newSlots(64) // wakes at 4
	if k, err := s.take(ctx, never, 40); k != 40 || err != nil {
		t.Fatalf("take 40 of 64: %d, %v", k, err)
	}
	if k, err := s.take(ctx, never, 40); k != 24 || err != nil {
		t.Fatalf("take 40 of 24 free: %d, %v", k, err)
	}
	got := make(chan int, 1)
	go func() {
		k, err := s.take(ctx, never, 10)
		if err != nil {
			t.Error(err)
		}
		got <- k
	}()
	waiting := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.room != nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for !waiting() {
		if time.Now().After(deadline) {
			t.Fatal("the take did not wait")
		}
		time.Sleep(time.Millisecond) // polling for the waiter to block
	}
	s.put(1)
	s.put(2)
	if !waiting() {
		t.Fatal("3 places back woke the take (it waits for 4)")
	}
	s.put(1)
	select {
	case k := <-got:
		if k != 4 {
			t.Fatalf("woken take got %d, want 4", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("4 places back did not wake the take")
	}

	cancelled, cancel := context.WithCancel(ctx)
	go func() {
		for !waiting() {
			time.Sleep(time.Millisecond) // polling for the waiter to block
		}
		cancel()
	}()
	if _, err := s.take(cancelled, never, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("take with a cancelled context: %v", err)
	}
	closing := make(chan struct{})
	close(closing)
	if _, err := s.take(ctx, closing, 1); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("take on a closed publisher: %v", err)
	}
}

// TestSlotsDrain: once the publisher is closing, a take fails even with
// places free (and gives back what it took), and drain returns once the
// last place taken is back, not at the first wake-up.
func TestSlotsDrain(t *testing.T) {
	ctx := context.Background()
	never := make(chan struct{})
	s := newSlots(64) // wakes at 4
	if k, err := s.take(ctx, never, 10); k != 10 || err != nil {
		t.Fatalf("take 10 of 64: %d, %v", k, err)
	}
	closing := make(chan struct{})
	close(closing)
	if k, err := s.take(ctx, closing, 5); k != 0 || !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("take with places free on a closed publisher: %d, %v", k, err)
	}
	if f := s.free.Load(); f != 54 {
		t.Fatalf("%d free after a refused take, want 54", f)
	}
	drained := make(chan error, 1)
	go func() { drained <- s.drain(ctx) }()
	for range 9 {
		s.put(1)
	}
	select {
	case err := <-drained:
		t.Fatalf("drain returned with a place still out: %v", err)
	default:
	}
	s.put(1)
	select {
	case err := <-drained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("drain did not return once every place was back")
	}
	s.take(ctx, never, 1)
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := s.drain(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain with a place out and a context ending: %v", err)
	}
}

// TestPublishReceiptsSmallBuffer: batches larger than the client's
// buffer are taken whole, a few places at a time, and every record gets
// its receipt.
func TestPublishReceiptsSmallBuffer(t *testing.T) {
	addr := startLogd(t)
	ctx := context.Background()
	cfg := parse(t, "logd://"+addr+"/small")
	cfg.Options = append(cfg.Options, kgo.MaxBufferedRecords(7))
	pub, err := NewPublisher(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var ok atomic.Int64
	ms := make([]transport.Message, 100)
	for i := range ms {
		ms[i] = transport.Message{Payload: []byte{byte(i)}}
	}
	for range 3 {
		took, err := pub.PublishReceipts(ctx, ms, func(_ int, _ transport.Receipt, err error) {
			if err != nil {
				t.Error(err)
				return
			}
			ok.Add(1)
		})
		if took != len(ms) || err != nil {
			t.Fatalf("took %d of %d: %v", took, len(ms), err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ok.Load(); n != 300 {
		t.Fatalf("%d receipts of 300", n)
	}
}
