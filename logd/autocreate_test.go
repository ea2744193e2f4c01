package logd

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAutoCreateByDefault: with a zero Config, as Kafka's default, a
// producer's first record creates its topic — franz-go (which must allow
// it) and kcat (which does by default).
func TestAutoCreateByDefault(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { *c = Config{Storage: c.Storage} })
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation())
	produceN(t, cl, "fresh", "v", 3)
	if _, ok := ts.store.Topic("fresh"); !ok {
		t.Fatal("the topic was not created")
	}
	kcatPath(t)
	kcat(t, "hello\n", "-b", ts.addr, "-t", "kcat-fresh", "-P")
	if out := kcat(t, "", "-b", ts.addr, "-t", "kcat-fresh", "-C", "-o", "beginning", "-e"); out != "hello\n" {
		t.Fatalf("kcat consumed %q", out)
	}
}

// TestAutoCreateOff: with auto-creation off, a produce to a missing
// topic is refused with UNKNOWN_TOPIC_OR_PARTITION, in Metadata and in
// Produce, nothing is created, and the clients report the error and give
// up: franz-go fails the record, kcat exits 1 (after its
// topic.metadata.propagation.max.ms, 30 s by default, shortened here).
func TestAutoCreateOff(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) { c.DisableAutoCreateTopics = true })
	cl := newClient(t, ts.addr, kgo.AllowAutoTopicCreation())

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("missing")
	meta.Topics, meta.AllowAutoTopicCreation = append(meta.Topics, mt), true
	resp, err := meta.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("Metadata for a missing topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	if code := rawProduce(t, cl, "missing", recordBatch([]byte("x"))); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("Produce to a missing topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "missing", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("franz-go produce to a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	kcatPath(t)
	start := time.Now()
	stderr, err := kcatFails(t, "hello\n", "-b", ts.addr, "-t", "missing", "-P", "-X", "topic.metadata.propagation.max.ms=1000")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("kcat -P to a missing topic: %v, want a failing exit status\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "Unknown topic or partition") {
		t.Fatalf("kcat did not report the error:\n%s", stderr)
	}
	t.Logf("kcat gave up after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))
	if _, ok := ts.store.Topic("missing"); ok {
		t.Fatal("the topic was created although auto-creation is off")
	}
}
