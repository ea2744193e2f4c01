package multicast

import (
	"testing"
	"testing/synctest"

	"github.com/brokerless/brokerless/transport"
)

// TestSubscriberQueueBounded: the reader hands the application batches
// of at most batchEvents events, and waits when the application has no
// room, however many events one call into the engine releases (a read
// of GRO runs of 64-byte messages releases tens of thousands). Before,
// a full batch grew when the application had no room: a recorder behind
// its logd held hundreds of thousands of events, and a publisher with
// flow control, which counts what the engine has taken, ran that far
// ahead of the application.
func TestSubscriberQueueBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queue, n = 2, 10 * batchEvents
		s := &Subscriber{ready: make(chan *batch, queue), free: make(chan *batch, queue+1), stop: make(chan struct{})}
		for range queue {
			s.free <- newBatch()
		}
		s.out = newBatch()
		ev := transport.Event{Kind: transport.EventMessage, Message: transport.Message{Payload: []byte("x")}}
		done := make(chan struct{})
		go func() { // the reader: one call into the engine releasing n events
			defer close(done)
			h := (*handler)(s)
			for range n {
				h.Deliver(&ev)
			}
			s.handOver()
		}()
		synctest.Wait() // the reader waits for the application
		for got := 0; got < n; {
			b := <-s.ready // the application, as Receive does
			if len(b.events) > batchEvents {
				t.Fatalf("a batch of %d events (at most %d); the reader had run %d events ahead", len(b.events), batchEvents, got+len(b.events))
			}
			got += len(b.events)
			b.reset()
			s.free <- b
		}
		<-done
	})
}
