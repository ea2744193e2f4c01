package transporttest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// publishers is how many goroutines share one Publisher in
// ConcurrentPublish.
const publishers = 4

// testConcurrentPublish has several goroutines publish on one Publisher
// and checks that it stays one consistent stream: each goroutine's
// messages in the order it published them (Ordered), and all of them
// exactly once (Retransmit|Deduplicated).
func testConcurrentPublish(t *testing.T, h Harness) {
	p := newPair(t, h, Faults{})
	per := h.messages() / publishers
	n := per * publishers
	r := newRecorder(t, h, p.Sub)
	done := publishConcurrently(t, p.pub, per)
	lasts := make([]int, publishers)
	for g := range lasts {
		lasts[g] = (g+1)*per - 1
	}
	r.collect(done, r.idle, waitFor(false, lasts...))
	awaitPublished(t, done)
	oneStream(t, r.events)
	checkLog(t, h, p.sem, r.events, n, bulkSize, false)
	if p.sem.Has(transport.Ordered) {
		checkPerPublisherOrder(t, r.events, per)
	}
}

// publishConcurrently publishes messages g*per..(g+1)*per-1 from
// goroutine g, then flushes. The returned channel is closed when all are
// done.
func publishConcurrently(t *testing.T, pub transport.Publisher, per int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(t.Context(), receiveDeadline)
		defer cancel()
		var wg sync.WaitGroup
		for g := range publishers {
			wg.Go(func() {
				for i := g * per; i < (g+1)*per; i++ {
					if err := pub.Publish(ctx, message(i, bulkSize(i))); err != nil {
						t.Errorf("publisher goroutine %d: Publish message %d: %v", g, i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := pub.Flush(ctx); err != nil {
			t.Errorf("Flush: %v", err)
		}
	}()
	return done
}

// checkPerPublisherOrder checks that each goroutine's messages were
// delivered in the order it published them.
func checkPerPublisherOrder(t *testing.T, events []transport.Event, per int) {
	t.Helper()
	last := make([]int, publishers)
	for g := range last {
		last[g] = -1
	}
	for i, ev := range events {
		if ev.Kind != transport.EventMessage {
			continue
		}
		idx, err := PayloadIndex(ev.Message.Payload)
		if err != nil || idx >= per*publishers {
			continue
		}
		if g := idx / per; idx <= last[g] {
			report(t, events, &Violation{Check: "ordered", Event: i,
				Reason: fmt.Sprintf("goroutine %d published message %d after %d, delivered before it", g, idx, last[g])})
			return
		}
		last[idx/per] = idx
	}
}
