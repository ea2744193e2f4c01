package logd

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestDiskFull: when the disk fills up, the produce that hits it gets
// KAFKA_STORAGE_ERROR and so does every later one, at once, while
// Server.Fenced names the partition and /healthz answers 503 naming it; once space is back the store's
// maintenance unfences it without a restart, and a franz-go producer
// that kept retrying through the outage gets its record stored once.
func TestDiskFull(t *testing.T) {
	faults := vfs.NewFaults(vfs.OS)
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Storage.FS = faults
		c.Storage.MaintenanceInterval = 20 * time.Millisecond
	})
	cl := newClient(t, ts.addr, kgo.DefaultProduceTopic("full"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(50*time.Millisecond))
	createTopic(t, cl, "full", 1)
	produceN(t, cl, "full", "before", 10)

	faults.SetRule(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	for i := range 5 {
		start := time.Now()
		code := rawProduce(t, cl, "full", recordBatch([]byte("refused")))
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("produce %d on a full disk answered after %v", i, took)
		}
		if code != kerr.KafkaStorageError.Code {
			t.Fatalf("produce %d on a full disk: error %d, want KAFKA_STORAGE_ERROR", i, code)
		}
	}
	if got := ts.Fenced(); len(got) != 1 || got[0] != (storage.TopicPartition{Topic: "full", Partition: 0}) {
		t.Fatalf("Fenced() = %v, want full/0", got)
	}
	if code, body := healthz(t, ts.Server); code != http.StatusServiceUnavailable || !strings.Contains(body, "fenced after a storage error: full/0") {
		t.Fatalf("healthz %d %q while full/0 is fenced", code, body)
	}

	// A producer that retries through the outage.
	done := make(chan error, 1)
	rec := &kgo.Record{Value: []byte("through the outage")}
	go func() { done <- cl.ProduceSync(context.Background(), rec).FirstErr() }()
	select {
	case err := <-done:
		t.Fatalf("a produce completed on a full disk: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	faults.SetRule(nil) // space is back
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no produce succeeded after space came back")
	}
	if got := ts.Fenced(); len(got) != 0 {
		t.Fatalf("still fenced: %v", got)
	}
	if code, body := healthz(t, ts.Server); code != http.StatusOK {
		t.Fatalf("healthz %d %q once the partition recovered", code, body)
	}
	produceN(t, cl, "full", "after", 10)
	c := newClient(t, ts.addr, kgo.ConsumeTopics("full"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var values []string
	for _, r := range consume(t, c, 21) {
		values = append(values, string(r.Value))
	}
	if end := listEnd(t, c, "full"); end != 21 {
		t.Fatalf("log end %d, want 21: %v", end, values)
	}
	for i, want := range map[int]string{0: "before-0", 9: "before-9", 10: "through the outage", 11: "after-0", 20: "after-9"} {
		if values[i] != want {
			t.Fatalf("record %d is %q, want %q (all: %v)", i, values[i], want, values)
		}
	}
}

// rawProduce sends one batch to partition 0 of topic (acks=all) and
// returns the partition's error code.
func rawProduce(t testing.TB, cl *kgo.Client, topic string, batch []byte) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
