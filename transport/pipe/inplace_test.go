package pipe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// inPlaceDest takes batches in place, as package kafka's
// PublishReceiptsInPlace does: it keeps the messages' slices, not
// copies, until it accepts them, and checks then that each still holds
// what the pipe was given for it.
type inPlaceDest struct {
	mu       sync.Mutex
	pending  []pendingWrite
	accepted map[uint64]int // source position → times accepted
	errs     []error
}

func (d *inPlaceDest) PublishReceiptsInPlace(_ context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, m := range ms {
		d.pending = append(d.pending, pendingWrite{m: m, done: func(r transport.Receipt, err error) { done(i, r, err) }})
	}
	return len(ms), nil
}

func (d *inPlaceDest) PublishReceipts(context.Context, []transport.Message, func(int, transport.Receipt, error)) (int, error) {
	return 0, fmt.Errorf("PublishReceipts called: the pipe should publish in place")
}

// accept checks and accepts up to n pending writes, from a random place
// on: receipts come in any order.
func (d *inPlaceDest) accept(rng *rand.Rand, n int) {
	d.mu.Lock()
	var dones []func(transport.Receipt, error)
	for ; n > 0 && len(d.pending) > 0; n-- {
		i := rng.IntN(len(d.pending))
		w := d.pending[i]
		d.pending = append(d.pending[:i], d.pending[i+1:]...)
		o, ok, err := transport.ParseOrigin(w.m.Headers)
		switch {
		case err != nil || !ok:
			d.errs = append(d.errs, fmt.Errorf("a write without its origin: %v", err))
		case string(w.m.Payload) != fmt.Sprintf("payload %d", o.Seq):
			d.errs = append(d.errs, fmt.Errorf("the write of %d holds %q: its bytes changed before its receipt", o.Seq, w.m.Payload))
		default:
			d.accepted[o.Seq]++
		}
		dones = append(dones, w.done)
	}
	d.mu.Unlock()
	for _, done := range dones {
		done(transport.Receipt{}, nil)
	}
}

func (d *inPlaceDest) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	return fmt.Errorf("PublishReceipt called: the pipe should publish in place")
}
func (d *inPlaceDest) Publish(context.Context, transport.Message) error { return nil }
func (d *inPlaceDest) Flush(context.Context) error                      { return nil }
func (d *inPlaceDest) Semantics() transport.Semantics                   { return transport.Durable }
func (d *inPlaceDest) Close() error                                     { return nil }

// TestPipeInPlace: into a destination that publishes in place, every
// message arrives once with the bytes it was received with, however
// late and in whatever order its receipt comes, while the pipe forwards
// many more batches: a batch's memory is reused only once all its
// receipts have come.
func TestPipeInPlace(t *testing.T) {
	const n = 20_000
	src := newAckingSource(n, func(transport.StreamID, uint64) error { return nil })
	for s := uint64(1); s <= n; s++ {
		ev := msg(feedA, s)
		ev.Message.Payload = fmt.Appendf(nil, "payload %d", s)
		src.events <- *ev
	}
	d := &inPlaceDest{accepted: map[uint64]int{}}
	p, err := New(&batchingSource{ackingSource: src}, d, Config{MaxInFlight: 512})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runPipe(ctx, p)
	rng := rand.New(rand.NewPCG(3, 4))
	deadline := time.Now().Add(waitLimit)
	for src.ackedAt(feedA) < n {
		if time.Now().After(deadline) {
			t.Fatalf("acknowledged up to %d of %d; %+v", src.ackedAt(feedA), n, p.Stats())
		}
		d.mu.Lock()
		pending := len(d.pending)
		d.mu.Unlock()
		if s := p.Stats(); pending == 0 || pending < 300 && s.InFlight < 512 && s.Forwarded < n { // let batches pile up
			time.Sleep(50 * time.Microsecond) // the fake gives no event to wait on
			continue
		}
		d.accept(rng, 1+rng.IntN(200))
	}
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, err := range d.errs[:min(len(d.errs), 3)] {
		t.Error(err)
	}
	for s := uint64(1); s <= n; s++ {
		if d.accepted[s] != 1 {
			t.Fatalf("message %d accepted %d times", s, d.accepted[s])
		}
	}
}
