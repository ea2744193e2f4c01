package logd

import (
	"context"
	"math/rand/v2"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// The connection layer's own cost, without the disk: small requests
// answered one after another on one connection, and produce requests of
// about 1 MiB (franz-go's default batch) with fsync off, so request
// reading and buffer handling are what is measured. Compare two builds
// in interleaved rounds:
//
//	go test -run XXX -bench Conn -count 5 ./logd/

// BenchmarkConnRoundTrip: ApiVersions v0 round trips on one connection.
func BenchmarkConnRoundTrip(b *testing.B) {
	ts := startServer(b, b.TempDir())
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 42)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := readFrame(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConnLargeRequests: 1 KiB random, uncompressed records with
// acks=1 and --fsync never, in franz-go's default batches (up to 1 MiB
// per request).
func BenchmarkConnLargeRequests(b *testing.B) {
	ts := startServer(b, filepath.Join(b.TempDir(), "logd"), func(c *Config) { c.Storage.Fsync = storage.FsyncNever })
	cl := newClient(b, ts.addr, kgo.DefaultProduceTopic("bench"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	createTopic(b, cl, "bench", 1)
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([][]byte, 64)
	for i := range values {
		values[i] = make([]byte, benchRecord)
		for j := range values[i] {
			values[i][j] = byte(rng.UintN(256))
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)*benchRecord/time.Since(start).Seconds()/(1<<20), "MiB/s")
}

// BenchmarkConnFetch: Fetch v11 round trips on one connection of a
// partition that has records, so each is answered at once (no long-poll
// wait, no socket watch).
func BenchmarkConnFetch(b *testing.B) {
	ts := startServer(b, b.TempDir(), func(c *Config) { c.Storage.Fsync = storage.FsyncNever })
	if err := ts.autoCreate("f"); err != nil {
		b.Fatal(err)
	}
	log, err := ts.store.Partition("f", 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := log.Append(recordBatch([]byte("hello"))); err != nil {
		b.Fatal(err)
	}
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	if err := req.ReadFrom(fetchBody("f", time.Minute)); err != nil {
		b.Fatal(err)
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 42)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := readFrame(c); err != nil {
			b.Fatal(err)
		}
	}
}
