package pipe

import (
	"context"
	"testing"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// genSource is a source of numbered messages of one stream, made as
// they are asked for: the cost of a source that hands over events it
// already holds, as a subscriber's Receive does from its batch. Its
// ReceiveBatch is offered only through genBatchSource.
type genSource struct {
	ev  transport.Event
	buf []transport.Event
}

func newGenSource() *genSource {
	return &genSource{ev: transport.Event{Kind: transport.EventMessage, Message: transport.Message{
		Stream: transport.StreamID{Feed: 7, Session: 1}, Payload: make([]byte, 64), Topic: "AAPL"}}}
}

func (s *genSource) Receive(context.Context) (transport.Event, error) {
	s.ev.Message.Seq++
	return s.ev, nil
}

func (s *genSource) Semantics() transport.Semantics { return transport.Ordered | transport.GapReports }
func (s *genSource) Close() error                   { return nil }

type genBatchSource struct{ *genSource }

func (s genBatchSource) ReceiveBatch(_ context.Context, maxEvents int) ([]transport.Event, error) {
	s.buf = s.buf[:0]
	for range max(maxEvents, 1) {
		s.ev.Message.Seq++
		s.buf = append(s.buf, s.ev)
	}
	return s.buf, nil
}

// instantDest accepts every message at once, on the publishing
// goroutine, and closes reached once it accepted n.
type instantDest struct {
	n, got  int
	reached chan struct{}
}

func (d *instantDest) PublishReceipts(_ context.Context, ms []transport.Message, done func(int, transport.Receipt, error)) (int, error) {
	for i := range ms {
		done(i, transport.Receipt{}, nil)
	}
	if d.got += len(ms); d.got >= d.n && d.reached != nil {
		close(d.reached)
		d.reached = nil
	}
	return len(ms), nil
}

func (d *instantDest) PublishReceipt(ctx context.Context, m transport.Message, done func(transport.Receipt, error)) error {
	_, err := d.PublishReceipts(ctx, []transport.Message{m}, func(_ int, r transport.Receipt, err error) { done(r, err) })
	return err
}
func (d *instantDest) Publish(context.Context, transport.Message) error { return nil }
func (d *instantDest) Flush(context.Context) error                      { return nil }
func (d *instantDest) Semantics() transport.Semantics                   { return transport.Durable }
func (d *instantDest) Close() error                                     { return nil }

// BenchmarkForward: the pipe's own cost per message, between a source
// that costs next to nothing and a destination that accepts at once:
// Receive, the core, the hand-off batch, building the messages and the
// receipts. "receive" reads the source one event a call; "batch" offers
// ReceiveBatch (as multicast.Subscriber does), which the pipe uses.
// cpu-ns/op is the process's CPU time a message, on both goroutines.
//
//	go test -run XXX -bench Forward -benchtime 2000000x ./transport/pipe/
func BenchmarkForward(b *testing.B) {
	for _, batched := range []bool{false, true} {
		name := "receive"
		if batched {
			name = "batch"
		}
		b.Run(name, func(b *testing.B) {
			var from transport.Subscriber = newGenSource()
			if batched {
				from = genBatchSource{newGenSource()}
			}
			d := &instantDest{n: b.N, reached: make(chan struct{})}
			reached := d.reached
			p, err := New(from, d, Config{})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			b.ResetTimer()
			cpu := latency.ProcessCPU()
			done := runPipe(ctx, p)
			<-reached
			b.StopTimer()
			b.ReportMetric(float64(latency.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
