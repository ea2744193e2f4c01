package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestPublishReceiptsConcurrent: PublishReceipts called from several
// goroutines at once, with batches of different sizes, calls every
// done exactly once per message. A batch goes back to the pool once
// its last receipt has run, which may be before the call that produced
// it returns; if that call still looked at the batch then (under -race,
// a data race with the goroutine that took the batch from the pool),
// it could produce another caller's records as its own.
func TestPublishReceiptsConcurrent(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "concurrent", 1)
	ctx := context.Background()
	pub := newPublisher(t, "logd://"+addr+"/concurrent")

	const goroutines, calls = 4, 150
	var (
		wg    sync.WaitGroup
		total atomic.Int64
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := 1 + 3*g // sizes differ: a batch reused by a longer call shows
			for c := range calls {
				got := make([]atomic.Int32, size)
				ms := make([]transport.Message, size)
				for i := range ms {
					ms[i] = transport.Message{Payload: fmt.Appendf(nil, "g%d c%d i%d", g, c, i)}
				}
				var wait sync.WaitGroup
				wait.Add(size)
				took, err := pub.PublishReceipts(ctx, ms, func(i int, _ transport.Receipt, err error) {
					if err != nil {
						t.Error(err)
					}
					if i < 0 || i >= size || got[i].Add(1) != 1 {
						t.Errorf("goroutine %d call %d: receipt %d called again (or out of range)", g, c, i)
						return
					}
					total.Add(1)
					wait.Done()
				})
				if took != size || err != nil {
					t.Errorf("took %d of %d: %v", took, size, err)
					return
				}
				wait.Wait()
			}
		}()
	}
	wg.Wait()
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for g := range goroutines {
		want += int64(calls * (1 + 3*g))
	}
	if n := total.Load(); n != want {
		t.Fatalf("%d receipts, want %d", n, want)
	}
}
