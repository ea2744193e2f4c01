package logd

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestUnwrittenAnswersBounded: a client that pipelines Fetches behind an
// acks=all produce (whose answer waits for its fsync) and does not take
// the answers gets one Fetch answer held for it, not one per request:
// the connection handles no request but a Produce while its unwritten
// answers hold connUnwrittenBytes or more. Each answer here carries
// 2 MiB of records read into memory (no sendfile), so six pipelined
// Fetches held 12 MiB; MaxFetchBytes (50 MiB) each, 16 of them, would
// hold 800 MiB for one connection. Kafka reads no request of a
// connection while its previous answer is unsent (SocketServer mutes
// the channel).
func TestUnwrittenAnswersBounded(t *testing.T) {
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Storage.FS = gate
		c.IdleTimeout = time.Hour
	})
	ts.noZeroCopy.Store(true) // record sets are copied into the answers
	for _, topic := range []string{"p", "f"} {
		if err := ts.autoCreate(topic); err != nil {
			t.Fatal(err)
		}
	}
	f, err := ts.store.Partition("f", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		res, err := f.Append(recordBatch(make([]byte, 512<<10)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WaitAppended(context.Background(), res); err != nil {
			t.Fatal(err)
		}
	}
	batch := uint64(f.Size()) // what each Fetch answers

	entered := gate.close() // the produce's fsync waits: so do the answers behind it
	t.Cleanup(gate.open)
	c := dial(t, ts.addr)
	sendProduce(t, c, 1, "p", recordBatch([]byte("a")))
	<-entered
	const fetches = 6
	fetch := fetchPartitions("f", nil, []int32{0})
	fetch.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 30
	for i := range int32(fetches) {
		if err := writeRequestCorr(c, 2+i, kmsg.Fetch.Int16(), fetch.GetVersion(), fetch.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "a second fetch handled, or the connection pausing", func() bool {
		return ts.metrics.fetchedBytes.Load() > batch || ts.metrics.unwrittenWaits.Load() > 0
	})
	if got := ts.metrics.fetchedBytes.Load(); got > batch {
		t.Fatalf("the server read %d bytes of records into answers its client had not taken (%d fetches of %d bytes pipelined), want at most one answer's (%d)", got, fetches, batch, batch)
	}
	gate.open()
	for i := range fetches + 1 {
		if _, err := readFrame(c); err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
	}
	if got, want := ts.metrics.fetchedBytes.Load(), uint64(fetches)*batch; got != want {
		t.Errorf("fetched %d bytes once the answers were taken, want %d", got, want)
	}
}
