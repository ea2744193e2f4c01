package multicast

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestSubscriberOwnReadBounded: an application reading for itself
// (Receive with nothing ready and nobody reading) reads GRO runs of
// small messages, each read bringing more events than Queue batches
// hold; what its batches cannot take waits in the read's buffers, and no
// batch grows past one datagram's events. Before, the batch being filled
// grew to hold the whole read, and each of the Queue+2 batches kept its
// grown size: hundreds of megabytes for a recorder of a fast feed.
func TestSubscriberOwnReadBounded(t *testing.T) {
	const n = 200_000
	cfg := testConfig(t)
	cfg.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1} // nothing lost: no repair releases a backlog at once
	scfg := cfg
	scfg.Queue = 2
	s := mustSub(t, scfg)
	if !s.Stats().GRO {
		t.Skip("the kernel gives no UDP GRO on lo: each read entry is one datagram")
	}
	p := mustPub(t, cfg)
	go publishN(t, p, 0, n, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var a accountant
	for a.next < n+1 {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("after sequence %d: %v; stats %+v", a.next-1, err, s.Stats())
		}
		a.add(t, &ev)
	}
	if len(a.gaps) != 0 {
		t.Fatalf("gaps with flow control: %v", a.gaps)
	}
	st := s.Stats()
	if st.OwnReads == 0 || st.GROReads == 0 {
		t.Fatalf("the application never read GRO runs for itself (own reads %d, GRO runs %d): the test shows nothing", st.OwnReads, st.GROReads)
	}
	s.Close()
	batches := []*batch{s.out, s.cur}
	for len(s.free) > 0 {
		batches = append(batches, <-s.free)
	}
	for len(s.ready) > 0 {
		batches = append(batches, <-s.ready)
	}
	for _, b := range batches {
		if b != nil && cap(b.events) > 2*batchEvents {
			t.Fatalf("a batch grew to %d events (made for %d); stats %+v", cap(b.events), batchEvents, st)
		}
	}
}

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
