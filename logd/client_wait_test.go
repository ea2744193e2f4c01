package logd

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestFetchMaxWaitCapped: a Fetch asking to wait 2^31-1 ms (24 days)
// for an empty partition is answered, empty, once IdleTimeout has
// passed.
func TestFetchMaxWaitCapped(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	if err := ts.autoCreate("t"); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	frame, err := rawRequest(t, c, kmsg.Fetch.Int16(), 11, fetchBody("t", math.MaxInt32*time.Millisecond))
	if err != nil {
		t.Fatalf("no answer to a fetch waiting 2^31-1 ms (IdleTimeout 300ms): %v", err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("error %d, %d record bytes; want an empty answer", p.ErrorCode, len(p.RecordBatches))
	}
}

// TestProduceTimeoutCapped: an acks=all produce with a timeout of
// 2^31-1 ms whose fsync does not complete is answered REQUEST_TIMED_OUT
// once IdleTimeout has passed.
func TestProduceTimeoutCapped(t *testing.T) {
	gate := &gateFS{FS: vfs.OS}
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.FS = gate; c.IdleTimeout = 300 * time.Millisecond })
	if err := ts.autoCreate("p"); err != nil {
		t.Fatal(err)
	}
	gate.close()         // segment fsyncs block from here on
	t.Cleanup(gate.open) // before the server closes (cleanups run last first)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = -1, math.MaxInt32
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "p"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordBatch([]byte("a"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c := dial(t, ts.addr)
	frame, err := rawRequest(t, c, kmsg.Produce.Int16(), 7, req.AppendTo(nil))
	if err != nil {
		t.Fatalf("no answer to a produce waiting 2^31-1 ms (IdleTimeout 300ms): %v", err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(7)
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("error %d, want REQUEST_TIMED_OUT (%d)", code, kerr.RequestTimedOut.Code)
	}
}
