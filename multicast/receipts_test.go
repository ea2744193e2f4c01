package multicast

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestReceiptsSettle: a receipt is settled by the datagram carrying its
// message's last fragment, with the error of any refused datagram that
// carried part of the message, and not by a refused datagram that
// carried nothing new (a heartbeat, a repair).
func TestReceiptsSettle(t *testing.T) {
	var r receipts
	var order []uint64
	done := func(rc transport.Receipt, _ error) { order = append(order, rc.Seq) }
	errRefused := syscall.EPERM
	for _, e := range []pendingReceipt{{first: 1, last: 1}, {first: 2, last: 4}, {first: 5, last: 5}, {first: 6, last: 8}, {first: 9, last: 9}} {
		e.done = done
		r.push(e)
	}
	steps := []struct {
		upto    uint64
		err     error
		settled int
	}{
		{1, nil, 0},        // the first heartbeat: nothing sent yet
		{3, nil, 1},        // 1, and 2 of 2..4
		{5, nil, 2},        // 3 and 4: 2..4 complete
		{5, errRefused, 2}, // a heartbeat refused: no message in it
		{6, errRefused, 3}, // 5 refused
		{7, errRefused, 3}, // 6 of 6..8 refused
		{9, nil, 4},        // 7 and 8: 6..8 complete, but its first part was refused
		{10, nil, 5},       // 9, sent
	}
	for _, s := range steps {
		r.settle(s.upto, s.err)
		if r.settled != s.settled {
			t.Fatalf("after settle(%d, %v): %d settled, want %d", s.upto, s.err, r.settled, s.settled)
		}
	}
	got := r.takeSettled(nil)
	wantErr := []bool{false, false, true, true, false}
	for i, e := range got {
		if refused := e.err != nil; refused != wantErr[i] || (refused && !errors.Is(e.err, errRefused)) {
			t.Errorf("receipt %d..%d: err %v, want refused %v", e.first, e.last, e.err, wantErr[i])
		}
	}
	fire(transport.StreamID{Feed: 1, Session: 2}, got)
	if len(order) != 5 || order[0] != 1 || order[1] != 2 || order[2] != 5 || order[3] != 6 || order[4] != 9 {
		t.Fatalf("done called for %v", order)
	}
	if r.n != 0 || r.settled != 0 {
		t.Fatalf("%d receipts left, %d settled", r.n, r.settled)
	}
}

// TestReceiptsRing: the queue keeps publish order as it wraps and grows;
// takeAll reports the unsettled ones closed.
func TestReceiptsRing(t *testing.T) {
	var r receipts
	next, seq := uint64(1), uint64(1)
	for round := range 50 {
		for range round % 37 {
			r.push(pendingReceipt{first: seq, last: seq})
			seq++
		}
		upto := next + uint64(round%5)
		r.settle(min(upto, seq), nil)
		for _, e := range r.takeSettled(nil) {
			if e.first != next {
				t.Fatalf("round %d: receipt %d, want %d", round, e.first, next)
			}
			next++
		}
	}
	left := r.takeAll(nil)
	for _, e := range left {
		if e.first != next || !errors.Is(e.err, transport.ErrClosed) {
			t.Fatalf("left: receipt %d (%v), want %d closed", e.first, e.err, next)
		}
		next++
	}
	if next != seq || len(left) == 0 {
		t.Fatalf("%d receipts taken of %d (%d left at the end)", next-1, seq-1, len(left))
	}
}

// TestPublishReceipt: every message published with a receipt gets one,
// once, in publish order, naming its stream and the Seq subscribers see
// it with, fragmented messages included.
func TestPublishReceipt(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	const n = 3000
	var mu sync.Mutex
	var receipts []transport.Receipt
	var index []int
	all := make(chan struct{})
	ctx := context.Background()
	for i := range n {
		size := 64
		if i%50 == 0 {
			size = 5000 // four datagrams
		}
		err := p.PublishReceipt(ctx, transport.Message{Payload: indexed(i, size)}, func(r transport.Receipt, err error) {
			if err != nil {
				t.Errorf("receipt of message %d: %v", i, err)
			}
			mu.Lock()
			defer mu.Unlock()
			receipts, index = append(receipts, r), append(index, i)
			if len(receipts) == n {
				close(all)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	seqs := map[int]uint64{}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for len(seqs) < n {
		ev, err := s.Receive(rctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(seqs), err)
		}
		switch ev.Kind {
		case transport.EventMessage:
			seqs[indexOf(ev.Message.Payload)] = ev.Message.Seq
		case transport.EventGap:
			t.Fatalf("gap %v", ev.Gap)
		}
	}
	select {
	case <-all:
	case <-rctx.Done():
		mu.Lock()
		t.Fatalf("%d receipts of %d", len(receipts), n)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, r := range receipts {
		if index[k] != k {
			t.Fatalf("receipt %d is message %d's: not in publish order", k, index[k])
		}
		if r.Stream != p.Stream() || r.Stream.Feed != cfg.Feed || r.Stream.Session == 0 {
			t.Fatalf("receipt %d names stream %v, the publisher is %v", k, r.Stream, p.Stream())
		}
		if r.Seq != seqs[k] {
			t.Fatalf("message %d: receipt says seq %d, the subscriber got it as %d", k, r.Seq, seqs[k])
		}
	}
	if p.Stats().Datagrams <= uint64(n/50*4) {
		t.Fatalf("messages were not fragmented or packed as expected: %+v", p.Stats())
	}
}

// TestReceiptNotSent: a message whose datagram the socket refused gets
// an error receipt, not a nil one: done waits for the write's outcome.
// Messages a closed Publisher never got to send get ErrClosed, before
// Close returns.
func TestReceiptNotSent(t *testing.T) {
	cfg := testConfig(t)
	cfg.CloseLinger = 50 * time.Millisecond
	p, err := NewPublisher(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeSending(p) // every write now fails
	got := make(chan error, 100)
	done := func(_ transport.Receipt, err error) { got <- err }
	ctx := context.Background()
	for range 100 {
		if err := p.PublishReceipt(ctx, transport.Message{Payload: make([]byte, 64)}, done); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if len(got) != 100 {
		t.Fatalf("%d receipts for 100 messages once Close returned", len(got))
	}
	for range 100 {
		if err := <-got; !errors.Is(err, transport.ErrClosed) {
			t.Fatalf("receipt of an unsent message: %v", err)
		}
	}
	if err := p.PublishReceipt(ctx, transport.Message{}, done); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("PublishReceipt after Close: %v", err)
	}
	if len(got) != 0 {
		t.Fatal("done called for a message PublishReceipt refused")
	}
}
