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
// hold; what its batches cannot take waits in the read's buffers, no
// batch grows, and no more batches remain than the free ones' room
// (Queue+1), s.out and s.cur. Before, the
// batch being filled grew to hold the whole read, and each of the
// Queue+2 batches kept its grown size: hundreds of megabytes for a
// recorder of a fast feed.
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
	batches := append([]*batch{s.out, s.cur}, s.over...)
	for b := s.free.tryTake(); b != nil; b = s.free.tryTake() {
		batches = append(batches, b)
	}
	for len(s.ready) > 0 {
		batches = append(batches, <-s.ready)
	}
	for _, b := range batches {
		if b != nil && cap(b.events) > batchEvents {
			t.Fatalf("a batch grew to %d events (made for %d); stats %+v", cap(b.events), batchEvents, st)
		}
	}
	if len(batches) > s.free.cap()+2 { // the free ones, s.out and s.cur
		t.Fatalf("%d batches remain, at most %d may", len(batches), s.free.cap()+2)
	}
}

// TestSubscriberOwnOverflow: the application, reading for itself, is
// its own consumer and cannot wait for room: when one call into the
// engine releases far more events than the queue holds (a heartbeat
// moving the window past a gap, with a backlog held behind it), the
// full batches wait in order in s.over, none grows, and the application
// takes them all in order.
func TestSubscriberOwnOverflow(t *testing.T) {
	const queue, n = 2, 10*batchEvents + 7
	s := &Subscriber{ready: make(chan *batch, queue), free: newFreeBatches(queue + 1), stop: make(chan struct{}), appReads: true}
	for range queue {
		s.free.put(newBatch())
	}
	s.out = newBatch()
	h := (*handler)(s)
	for i := range n {
		h.Deliver(&transport.Event{Kind: transport.EventMessage, Message: transport.Message{Payload: indexed(i, 8)}})
	}
	if len(s.over) == 0 {
		t.Fatal("nothing overflowed: the test shows nothing")
	}
	if !s.mustPause() {
		t.Fatal("the step would go on reading with batches waiting in s.over")
	}
	for got := 0; got < n; {
		if s.cur != nil {
			s.recycle(s.cur)
		}
		s.takeOwn()
		if cap(s.cur.events) > batchEvents {
			t.Fatalf("a batch grew to %d events", cap(s.cur.events))
		}
		if len(s.cur.events) == 0 {
			t.Fatalf("nothing to take after %d of %d", got, n)
		}
		for _, ev := range s.cur.events {
			if i := indexOf(ev.Message.Payload); i != got {
				t.Fatalf("event %d where %d was next", i, got)
			}
			got++
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
		s := &Subscriber{ready: make(chan *batch, queue), free: newFreeBatches(queue + 1), stop: make(chan struct{})}
		for range queue {
			s.free.put(newBatch())
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
			s.free.put(b)
		}
		<-done
	})
}
