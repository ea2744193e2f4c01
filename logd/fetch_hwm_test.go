package logd

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestFetchBetweenHighWatermarkAndLogEnd: a Fetch at an offset above the
// high watermark but not above the log end (appended, its fsync not
// done: an acks=1 produce was answered with it) is answered with no
// records and no error, as by Kafka (LocalLog.read: OFFSET_OUT_OF_RANGE
// only past the log end or below its start), and gets the records once
// they are durable. logd answered OFFSET_OUT_OF_RANGE, which makes a
// consumer reset its position by auto.offset.reset: to the log end
// (librdkafka's default), skipping the records it was about to read,
// or to the start, reading everything again.
func TestFetchBetweenHighWatermarkAndLogEnd(t *testing.T) {
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.FS = gate })
	if err := ts.autoCreate("t"); err != nil {
		t.Fatal(err)
	}
	log, err := ts.store.Partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	entered := gate.close()
	t.Cleanup(gate.open)
	for _, v := range []string{"a", "b"} {
		if _, err := log.Append(recordBatch([]byte(v))); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	if hwm, end := log.HighWatermark(), log.EndOffset(); hwm != 0 || end != 2 {
		t.Fatalf("high watermark %d, log end %d, want 0 and 2", hwm, end)
	}
	cl := newClient(t, ts.addr)
	fetch := func(offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := fetchPartitions("t", map[int32]int64{0: offset}, []int32{0})
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		offset int64
		want   int16
	}{{1, 0}, {2, 0}, {3, kerr.OffsetOutOfRange.Code}} {
		if p := fetch(c.offset); p.ErrorCode != c.want || len(p.RecordBatches) != 0 {
			t.Errorf("fetch at %d (high watermark 0, log end 2): error %d with %d bytes, want error %d and no records", c.offset, p.ErrorCode, len(p.RecordBatches), c.want)
		}
	}
	gate.open()
	waitUntil(t, "the appends durable", func() bool { return log.HighWatermark() == 2 })
	p := fetch(1)
	if p.ErrorCode != 0 || len(p.RecordBatches) < 8 || binary.BigEndian.Uint64(p.RecordBatches) != 1 {
		t.Errorf("fetch at 1 once durable: error %d, %d bytes, want the batch at offset 1", p.ErrorCode, len(p.RecordBatches))
	}
}
