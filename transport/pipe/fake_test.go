package pipe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/brokerless/brokerless/transport"
)

// source is a fake subscriber fed from a channel; closing the channel
// closes it.
type source struct {
	events chan transport.Event
}

func newSource(n int) *source { return &source{events: make(chan transport.Event, n)} }

func (s *source) Receive(ctx context.Context) (transport.Event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return transport.Event{}, transport.ErrClosed
		}
		return ev, nil
	case <-ctx.Done():
		return transport.Event{}, ctx.Err()
	}
}

func (s *source) Semantics() transport.Semantics { return transport.Ordered | transport.GapReports }
func (s *source) Close() error                   { return nil }

func (s *ackingSource) Semantics() transport.Semantics {
	return s.source.Semantics() | transport.AtLeastOnce
}

// ackingSource is a source that can be acknowledged. Each Ack is checked
// against check (what the destination holds) and recorded.
type ackingSource struct {
	*source
	check func(transport.StreamID, uint64) error

	mu      sync.Mutex
	acked   map[transport.StreamID]uint64
	errs    []error
	changed chan struct{}
}

func newAckingSource(n int, check func(transport.StreamID, uint64) error) *ackingSource {
	return &ackingSource{source: newSource(n), check: check, acked: map[transport.StreamID]uint64{}, changed: make(chan struct{}, 1)}
}

func (s *ackingSource) Ack(_ context.Context, stream transport.StreamID, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.acked[stream]; ok && seq <= prev {
		s.errs = append(s.errs, fmt.Errorf("ack %s %d after %d", stream, seq, prev))
	}
	if err := s.check(stream, seq); err != nil {
		s.errs = append(s.errs, err)
	}
	s.acked[stream] = seq
	signal(s.changed)
	return nil
}

func (s *ackingSource) ackedAt(stream transport.StreamID) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked[stream]
}

// dest is a fake destination. Published messages wait as pending until
// accepted: in order by accept, or in random batches by a goroutine
// (shuffle). A write number failAt is refused. Accepted messages are
// held; kill forgets the pending ones, as a killed pipe's client would.
type dest struct {
	mu         sync.Mutex
	held       []transport.Message
	pending    []pendingWrite
	published  int
	failAt     int
	maxPending int
}

type pendingWrite struct {
	m    transport.Message
	done func(transport.Receipt, error)
}

func copyMessage(m transport.Message) transport.Message {
	c := m
	c.Key = append([]byte(nil), m.Key...)
	c.Payload = append([]byte(nil), m.Payload...)
	c.Headers = nil
	for _, h := range m.Headers {
		c.Headers = append(c.Headers, transport.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
	}
	return c
}

func (d *dest) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.published++
	d.pending = append(d.pending, pendingWrite{m: copyMessage(m), done: done})
	d.maxPending = max(d.maxPending, len(d.pending))
	return nil
}

// accept accepts the first n pending writes in order (all for n < 0).
func (d *dest) accept(n int) {
	d.mu.Lock()
	if n < 0 || n > len(d.pending) {
		n = len(d.pending)
	}
	batch := append([]pendingWrite(nil), d.pending[:n]...)
	d.pending = d.pending[n:]
	var dones []func()
	for _, w := range batch {
		var err error
		if d.failAt > 0 && len(d.held)+1 == d.failAt {
			err = fmt.Errorf("write %d refused", d.failAt)
			d.failAt = 0
		} else {
			w.m.Stream, w.m.Seq = transport.StreamID{Topic: "dest"}, uint64(len(d.held))
			d.held = append(d.held, w.m)
		}
		done := w.done
		dones = append(dones, func() { done(transport.Receipt{Stream: transport.StreamID{Topic: "dest"}}, err) })
	}
	d.mu.Unlock()
	for _, f := range dones {
		f()
	}
}

// shuffle accepts what is pending in random order, batch by batch, until
// stop is closed: receipts of several destination streams come back in
// any order.
func (d *dest) shuffle(rng *rand.Rand, stop <-chan struct{}, tick <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		d.mu.Lock()
		rng.Shuffle(len(d.pending), func(i, j int) { d.pending[i], d.pending[j] = d.pending[j], d.pending[i] })
		d.mu.Unlock()
		d.accept(1 + rng.IntN(64))
	}
}

func (d *dest) kill() {
	d.mu.Lock()
	d.pending = nil
	d.mu.Unlock()
}

func (d *dest) Tail(_ context.Context, n int) ([]transport.Message, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]transport.Message(nil), d.held[max(0, len(d.held)-n):]...), nil
}

// holds checks that every message of stream up to seq that the
// destination was given is held: what an acknowledgement promises.
// given lists each stream's positions in order; acknowledgements must
// not go back.
func (d *dest) holds(given map[transport.StreamID][]uint64) func(transport.StreamID, uint64) error {
	have := map[transport.StreamID]map[uint64]bool{}
	scanned := 0
	checked := map[transport.StreamID]int{}
	return func(stream transport.StreamID, seq uint64) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		for ; scanned < len(d.held); scanned++ {
			if src, _, pos, _, ok, _ := span(&d.held[scanned]); ok {
				if have[src] == nil {
					have[src] = map[uint64]bool{}
				}
				have[src][pos] = true
			}
		}
		g := given[stream]
		i := checked[stream]
		for ; i < len(g) && g[i] <= seq; i++ {
			if !have[stream][g[i]] {
				return fmt.Errorf("ack %s %d before %d was held", stream, seq, g[i])
			}
		}
		checked[stream] = i
		return nil
	}
}

// batchDest is a dest that takes many messages at once, as package
// kafka's Publisher does; it counts the calls and their messages.
type batchDest struct {
	*dest
	calls, messages atomic.Int64
}

func (b *batchDest) PublishReceipts(ctx context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	b.calls.Add(1)
	for i := range ms {
		if err := b.PublishReceipt(ctx, ms[i], func(r transport.Receipt, err error) { done(i, r, err) }); err != nil {
			return i, err
		}
		b.messages.Add(1)
	}
	return len(ms), nil
}

// plainDest is a destination without receipts: Flush accepts.
type plainDest struct{ d *dest }

func (p plainDest) Publish(ctx context.Context, m transport.Message) error {
	return p.d.PublishReceipt(ctx, m, func(transport.Receipt, error) {})
}
func (p plainDest) Flush(context.Context) error    { p.d.accept(-1); return nil }
func (p plainDest) Semantics() transport.Semantics { return transport.Durable }
func (p plainDest) Close() error                   { return nil }

func (d *dest) Publish(ctx context.Context, m transport.Message) error {
	return d.PublishReceipt(ctx, m, func(transport.Receipt, error) {})
}
func (d *dest) Flush(context.Context) error    { return nil }
func (d *dest) Semantics() transport.Semantics { return transport.Durable }
func (d *dest) Close() error                   { return nil }

// batchingSource is an ackingSource that hands over many events at once
// (transport.BatchSubscriber): what its channel holds, up to maxEvents, in a buffer it
// overwrites with zero events at its next call, so that a pipe using
// events past that call sees them gone. Called from one goroutine; its
// counters are read after Run returned.
type batchingSource struct {
	*ackingSource
	buf            []transport.Event
	calls, largest int
}

func (s *batchingSource) ReceiveBatch(ctx context.Context, maxEvents int) ([]transport.Event, error) {
	clear(s.buf)
	s.calls++
	ev, err := s.Receive(ctx)
	if err != nil {
		return nil, err
	}
	s.buf = append(s.buf[:0], ev)
	for len(s.buf) < maxEvents {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return s.buf, nil
			}
			s.buf = append(s.buf, ev)
			continue
		default:
		}
		break
	}
	s.largest = max(s.largest, len(s.buf))
	return s.buf, nil
}
