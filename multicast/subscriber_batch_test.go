package multicast

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// eventsBatch is a batch of message events whose Seq are seqs.
func eventsBatch(seqs ...uint64) *batch {
	b := newBatch()
	for _, s := range seqs {
		b.add(&transport.Event{Kind: transport.EventMessage, Message: transport.Message{Seq: s, Payload: indexed(int(s), 8)}})
	}
	return b
}

// TestReceiveBatch: ReceiveBatch hands over the rest of the current
// batch, at most maxEvents of it, in order, mixed with Receive; a batch
// read to its end goes back to the reader; a closed subscriber returns
// ErrClosed even with events queued, and a done context its error.
func TestReceiveBatch(t *testing.T) {
	s := readerHeldSubscriber(t, 4)
	s.ready <- eventsBatch(1, 2, 3, 4, 5)
	s.ready <- eventsBatch(6, 7)
	ctx := context.Background()
	var got []uint64
	take := func(maxEvents, want int) {
		t.Helper()
		evs, err := s.ReceiveBatch(ctx, maxEvents)
		if err != nil || len(evs) != want {
			t.Fatalf("ReceiveBatch(%d): %d events, %v; want %d", maxEvents, len(evs), err, want)
		}
		for _, ev := range evs {
			if indexOf(ev.Message.Payload) != int(ev.Message.Seq) {
				t.Fatalf("event %d carries payload %d", ev.Message.Seq, indexOf(ev.Message.Payload))
			}
			got = append(got, ev.Message.Seq)
		}
	}
	take(3, 3)
	ev, err := s.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, ev.Message.Seq)
	take(100, 1) // the rest of the first batch
	if s.free.len() != 0 {
		t.Fatalf("%d batches back to the reader while the first is still valid", s.free.len())
	}
	take(0, 1) // below 1 counts as 1
	if s.free.len() != 1 {
		t.Fatalf("%d batches back to the reader after the first was read to its end, want 1", s.free.len())
	}
	take(100, 1)
	if want := []uint64{1, 2, 3, 4, 5, 6, 7}; !equalSeqs(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}

	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if evs, err := s.ReceiveBatch(cctx, 10); !errors.Is(err, context.DeadlineExceeded) || evs != nil {
		t.Fatalf("nothing ready, context done: %d events, %v", len(evs), err)
	}
	s.ready <- eventsBatch(8)
	s.shut.Store(true) // as Close begins
	close(s.stop)
	if evs, err := s.ReceiveBatch(ctx, 10); !errors.Is(err, transport.ErrClosed) || evs != nil {
		t.Fatalf("closed with an event queued: %d events, %v", len(evs), err)
	}
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReceiveBatchDelivers: a feed read with ReceiveBatch arrives whole
// and in order, in batches of more than one event.
func TestReceiveBatchDelivers(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	const n = 5000
	publishN(t, p, 0, n, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next, largest := 0, 0
	for next < n {
		evs, err := s.ReceiveBatch(ctx, 64)
		if err != nil {
			t.Fatalf("after %d messages: %v", next, err)
		}
		if len(evs) > 64 {
			t.Fatalf("%d events, asked for at most 64", len(evs))
		}
		largest = max(largest, len(evs))
		for _, ev := range evs {
			switch ev.Kind {
			case transport.EventMessage:
				if i := indexOf(ev.Message.Payload); i != next {
					t.Fatalf("message %d, want %d", i, next)
				}
				next++
			case transport.EventGap:
				t.Fatalf("gap %v", ev.Gap)
			}
		}
	}
	if largest < 2 {
		t.Errorf("largest batch %d events: ReceiveBatch handed over one event at a time", largest)
	}
}

// readerHeldSubscriber returns a subscriber with room for ready
// batches whose reader goroutine holds the reading role (it has none
// here): a Receive with nothing ready waits for it, as for one that is
// slow to read, on a socket of its own.
func readerHeldSubscriber(tb testing.TB, ready int) *Subscriber {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &Subscriber{data: conn, ready: make(chan *batch, ready), free: newFreeBatches(ready + 1), roleFree: make(chan struct{}, 1), stop: make(chan struct{})}
}

// benchReceiving returns a subscriber whose reader hands back every
// batch of 512 message events at once, as it gets it, doing nothing
// else: the cost of handing events to the application alone. A Receive
// that finds nothing ready waits for it.
func benchReceiving(b *testing.B) *Subscriber {
	s := readerHeldSubscriber(b, 2)
	seqs := make([]uint64, batchEvents)
	for i := range seqs {
		seqs[i] = uint64(i)
	}
	for range 2 {
		s.ready <- eventsBatch(seqs...)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			bt := s.free.take(s.stop)
			if bt == nil {
				return
			}
			bt.events = bt.events[:batchEvents] // the same events again
			s.ready <- bt
		}
	}()
	b.Cleanup(func() { close(s.stop); <-done })
	return s
}

// BenchmarkReceive and BenchmarkReceiveBatch: the cost per event of
// handing events to the application, with Receive and with
// ReceiveBatch(ctx, 256).
//
//	go test -run XXX -bench 'Receive(Batch)?$' ./multicast/
func BenchmarkReceive(b *testing.B) {
	s := benchReceiving(b)
	ctx := context.Background()
	var sum uint64
	for b.Loop() {
		ev, err := s.Receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sum += ev.Message.Seq
	}
	_ = sum
}

func BenchmarkReceiveBatch(b *testing.B) {
	s := benchReceiving(b)
	ctx := context.Background()
	var sum uint64
	n := 0
	for n < b.N {
		evs, err := s.ReceiveBatch(ctx, 256)
		if err != nil {
			b.Fatal(err)
		}
		for i := range evs {
			sum += evs[i].Message.Seq
		}
		n += len(evs)
	}
	_ = sum
}
