package logd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCompactionThroughKafka: a compacted topic keeps the latest value of
// each key and drops tombstones once they are older than
// delete.retention.ms; the offsets of what remains are unchanged, and a
// Kafka consumer reads the compacted log.
func TestCompactionThroughKafka(t *testing.T) {
	// The store's clock (tombstone age) is the test's; the server's
	// network timeouts keep real time.
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Storage.Now = func() time.Time { return time.Unix(0, clock.Load()) }
		c.Storage.MaintenanceInterval = -1
	})
	cl := newClient(t, ts.addr, kgo.ProducerLinger(0))
	createTopic(t, cl, "kv", 1, "cleanup.policy", "compact", "segment.bytes", "1024", "delete.retention.ms", "60000")
	offsets := map[string]int64{}
	produce := func(key string, value []byte) {
		r := &kgo.Record{Topic: "kv", Key: []byte(key), Value: value, Timestamp: now}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offsets[key+"="+string(value)] = r.Offset
	}
	for round := 0; round < 5; round++ {
		for k := 0; k < 10; k++ {
			produce(fmt.Sprintf("k%d", k), []byte(fmt.Sprintf("v%d-%d", k, round)))
		}
	}
	produce("k3", nil) // a tombstone
	for i := 0; i < 30; i++ {
		produce("filler", []byte(fmt.Sprint(i))) // roll segments past the interesting ones
	}
	read := func() map[string]*kgo.Record {
		c := newClient(t, ts.addr, kgo.ConsumeTopics("kv"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		end := listEnd(t, c, "kv")
		latest := map[string]*kgo.Record{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatal("read timed out")
			}
			done := false
			fs.EachRecord(func(r *kgo.Record) {
				if prev := latest[string(r.Key)]; prev != nil && prev.Offset >= r.Offset {
					t.Fatalf("offsets not increasing at %d", r.Offset)
				}
				latest[string(r.Key)] = r
				done = r.Offset == end-1
			})
			if done {
				return latest
			}
		}
	}
	if err := ts.store.Maintain(now); err != nil {
		t.Fatal(err)
	}
	latest := read()
	for k := 0; k < 10; k++ {
		key := fmt.Sprintf("k%d", k)
		r := latest[key]
		want := fmt.Sprintf("v%d-4", k)
		if k == 3 {
			if r == nil || r.Value != nil {
				t.Fatalf("tombstone of k3 gone before delete.retention.ms: %+v", r)
			}
			continue
		}
		if r == nil || string(r.Value) != want || r.Offset != offsets[key+"="+want] {
			t.Fatalf("%s: %+v, want %q at offset %d", key, r, want, offsets[key+"="+want])
		}
	}
	now = now.Add(2 * time.Minute)
	clock.Store(now.UnixNano())
	if err := ts.store.Maintain(now); err != nil {
		t.Fatal(err)
	}
	if r := read()["k3"]; r != nil {
		t.Fatalf("tombstone kept past delete.retention.ms: %+v", r)
	}
	if size := ts.metrics.producedBytes.Load(); size == 0 {
		t.Fatal("metrics")
	}
}

// TestMetricsEndpoint: /metrics parses as Prometheus text and carries
// partition offsets, group lag and request counts; /healthz answers.
func TestMetricsEndpoint(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "m", 2)
	produceN(t, cl, "m", "x", 20)
	g := newClient(t, ts.addr, kgo.ConsumerGroup("mg"), kgo.ConsumeTopics("m"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	consume(t, g, 20)
	if err := g.CommitUncommittedOffsets(context.Background()); err != nil {
		t.Fatal(err)
	}
	produceN(t, cl, "m", "y", 6)

	srv := httptest.NewServer(ts.HTTPHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	sum := func(name string) float64 {
		f := families[name]
		if f == nil {
			t.Fatalf("no %s in\n%s", name, body)
		}
		var s float64
		for _, m := range f.Metric {
			switch {
			case m.Gauge != nil:
				s += m.Gauge.GetValue()
			case m.Counter != nil:
				s += m.Counter.GetValue()
			case m.Untyped != nil:
				s += m.Untyped.GetValue()
			}
		}
		return s
	}
	if got := sum("logd_partition_log_end_offset"); got != 26 {
		t.Fatalf("end offsets sum %v, want 26", got)
	}
	if got := sum("logd_group_lag"); got != 6 {
		t.Fatalf("group lag %v, want 6", got)
	}
	if sum("logd_requests_total") == 0 || families["logd_fsync_seconds"] == nil {
		t.Fatal("request counts or fsync histogram missing")
	}
	// kafka_exporter's names and labels, beside ours.
	for name, want := range map[string]float64{
		"kafka_topic_partition_current_offset": 26, "kafka_topic_partition_oldest_offset": 0,
		"kafka_consumergroup_lag": 6, "kafka_consumergroup_lag_sum": 6, "kafka_consumergroup_current_offset": 20,
		"kafka_consumergroup_current_offset_sum": 20, "kafka_topic_partitions": 2, "kafka_brokers": 1,
		"kafka_topic_partition_replicas": 2, "kafka_consumergroup_members": 1,
	} {
		if got := sum(name); got != want {
			t.Errorf("%s sums to %v, want %v", name, got, want)
		}
	}
	for _, m := range families["kafka_consumergroup_lag"].Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["consumergroup"] != "mg" || labels["topic"] != "m" || labels["partition"] == "" || len(labels) != 3 {
			t.Errorf("kafka_consumergroup_lag labels %v, want consumergroup, topic, partition", labels)
		}
	}
	promtoolCheck(t, body)
	hr, err := http.Get(srv.URL + "/healthz")
	if err != nil || hr.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, hr)
	}
}
