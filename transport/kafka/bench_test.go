package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/latency"
)

// BenchmarkPublish: 64-byte messages into logd (fsync always, group
// commit) through the transport's Publisher, with and without receipts,
// one at a time and 1024 a call (PublishReceipts), against kgo's Produce
// alone (the baseline) on the same logd. Run with
// -count N: the three alternate, so each round compares like with like.
// cpu-ns/op is the process's CPU time a message (client and logd, both
// in the process), steadier than ns/op when other processes share the
// cores.
func BenchmarkPublish(b *testing.B) {
	addr := startLogd(b)
	ctx := context.Background()
	payload := make([]byte, 64)
	b.Run("kgo", func(b *testing.B) {
		cl := newClient(b, addr, kgo.DefaultProduceTopic("bench-kgo"), kgo.AllowAutoTopicCreation())
		b.ReportAllocs()
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			cl.Produce(ctx, &kgo.Record{Value: append([]byte(nil), payload...)}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	})
	for _, receipts := range []bool{false, true} {
		name := "transport"
		if receipts {
			name = "transport-receipts"
		}
		b.Run(name, func(b *testing.B) {
			pub, err := NewPublisher(ctx, Config{Brokers: []string{addr}, Topic: "bench-" + name})
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			done := func(_ transport.Receipt, err error) {
				if err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				m := transport.Message{Payload: payload}
				if receipts {
					err = pub.PublishReceipt(ctx, m, done)
				} else {
					err = pub.Publish(ctx, m)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			if err := pub.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("transport-batches", func(b *testing.B) {
		pub, err := NewPublisher(ctx, Config{Brokers: []string{addr}, Topic: "bench-batches"})
		if err != nil {
			b.Fatal(err)
		}
		defer pub.Close()
		done := func(_ int, _ transport.Receipt, err error) {
			if err != nil {
				b.Error(err)
			}
		}
		ms := make([]transport.Message, 0, 1024)
		b.ReportAllocs()
		b.SetBytes(int64(len(payload)))
		cpu := latency.ProcessCPU()
		for b.Loop() {
			if ms = append(ms, transport.Message{Payload: payload}); len(ms) == cap(ms) {
				if _, err := pub.PublishReceipts(ctx, ms, done); err != nil {
					b.Fatal(err)
				}
				ms = ms[:0]
			}
		}
		if _, err := pub.PublishReceipts(ctx, ms, done); err != nil {
			b.Fatal(err)
		}
		if err := pub.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(latency.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	})
}
