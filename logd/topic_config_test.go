package logd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// TestTopicConfigValidation: every topic config Kafka 3.x knows is
// accepted with its default value, values Kafka would refuse are
// refused, and applied values land in logd's units.
func TestTopicConfigValidation(t *testing.T) {
	for name, kc := range kafkaTopicConfigs {
		if _, err := parseTopicConfig(map[string]*string{name: &kc.def}); err != nil {
			t.Errorf("%s=%q (Kafka's default) refused: %v", name, kc.def, err)
		}
	}
	for _, bad := range [][2]string{
		{"no.such.config", "1"},
		{"min.cleanable.dirty.ratio", "1.5"},
		{"min.cleanable.dirty.ratio", "half"},
		{"segment.bytes", "13"},
		{"segment.bytes", "4294967296"}, // not an int
		{"segment.ms", "0"},
		{"retention.ms", "-2"},
		{"cleanup.policy", "compact,forever"},
		{"cleanup.policy", "Compact"},
		{"compression.type", "brotli"},
		{"compression.zstd.level", "23"},
		{"compression.gzip.level", "0"},
		{"unclean.leader.election.enable", "yes"},
		{"message.format.version", "banana"},
		{"message.timestamp.type", "NowTime"},
		{"leader.replication.throttled.replicas", "0:1,*"},
		{"min.insync.replicas", "0"},
		{"max.compaction.lag.ms", "0"},
		{"local.retention.ms", "-3"},
	} {
		v := bad[1]
		if _, err := parseTopicConfig(map[string]*string{bad[0]: &v}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s=%q: %v, want ErrInvalidConfig", bad[0], v, err)
		}
	}
	lag, maxLag := "10", "5"
	if _, err := parseTopicConfig(map[string]*string{"min.compaction.lag.ms": &lag, "max.compaction.lag.ms": &maxLag}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("min.compaction.lag.ms > max.compaction.lag.ms: %v, want ErrInvalidConfig", err)
	}

	s := func(v string) *string { return &v }
	tc, err := parseTopicConfig(map[string]*string{
		"cleanup.policy":                        s("delete, compact"),
		"retention.ms":                          s("9223372036854775807"), // Debezium's "forever"
		"retention.bytes":                       s("0"),
		"segment.bytes":                         s("100"),
		"delete.retention.ms":                   s("0"),
		"index.interval.bytes":                  s("0"),
		"max.message.bytes":                     s("2147483647"),
		"min.cleanable.dirty.ratio":             s("0.01"),
		"leader.replication.throttled.replicas": s("0:1, 1:2"),
		"unclean.leader.election.enable":        s("TRUE"),
		"message.downconversion.enable":         nil, // null: Kafka's default
	})
	if err != nil {
		t.Fatal(err)
	}
	want := storage.TopicConfig{
		Cleanup: storage.CleanupCompactDelete, RetentionAge: -1, RetentionBytes: 1, SegmentBytes: storage.MinSegmentBytes,
		DeleteRetention: time.Nanosecond, IndexIntervalBytes: 1, MaxBatchBytes: storage.MaxBatchBytes,
	}
	kept := tc.Kafka
	tc.Kafka = nil
	if !reflect.DeepEqual(tc, want) {
		t.Fatalf("applied %+v, want %+v", tc, want)
	}
	if len(kept) != 3 || kept["min.cleanable.dirty.ratio"] != "0.01" || kept["leader.replication.throttled.replicas"] != "0:1, 1:2" ||
		kept["unclean.leader.election.enable"] != "TRUE" {
		t.Fatalf("kept %v", kept)
	}
}

// TestTopicConfigsFromKafkaTools: topics created with the configs Kafka
// Streams, Connect and Debezium use are created; logd applies the ones
// it honours, keeps the others with the topic (across a restart), shows
// all of them in DescribeConfigs, and logs each unapplied name once.
func TestTopicConfigsFromKafkaTools(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Logger = logger })
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "app-store-changelog", 1, "cleanup.policy", "compact", "min.compaction.lag.ms", "0",
		"min.cleanable.dirty.ratio", "0.01", "segment.bytes", "1048576", "message.timestamp.type", "CreateTime")
	createTopic(t, cl, "connect-offsets", 1, "cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0.5")
	createTopic(t, cl, "schema-history", 1, "cleanup.policy", "delete", "retention.ms", "9223372036854775807",
		"retention.bytes", "-1", "unclean.leader.election.enable", "false")

	info, _ := ts.store.Topic("app-store-changelog")
	if info.Config.Cleanup != storage.CleanupCompact || info.Config.SegmentBytes != 1<<20 {
		t.Fatalf("applied config %+v", info.Config)
	}
	if info, _ := ts.store.Topic("schema-history"); info.Config.RetentionAge != -1 {
		t.Fatalf("retention.ms=Long.MAX applied as %v, want -1 (never)", info.Config.RetentionAge)
	}
	if n := strings.Count(logs.String(), "config=min.cleanable.dirty.ratio"); n != 1 {
		t.Fatalf("min.cleanable.dirty.ratio logged %d times, want once:\n%s", n, logs.String())
	}
	for _, name := range []string{"min.compaction.lag.ms", "message.timestamp.type", "unclean.leader.election.enable"} {
		if !strings.Contains(logs.String(), "config="+name) {
			t.Fatalf("%s not logged:\n%s", name, logs.String())
		}
	}

	check := func(ts *testServer) {
		t.Helper()
		got := describeTopic(t, ts, "app-store-changelog")
		for name, want := range map[string]struct {
			value   string
			dynamic bool
		}{
			"cleanup.policy":            {"compact", true},
			"segment.bytes":             {"1048576", true},
			"min.cleanable.dirty.ratio": {"0.01", true},
			"min.compaction.lag.ms":     {"0", true},
			"retention.ms":              {"604800000", false},
			"compression.type":          {"producer", false},
			"min.insync.replicas":       {"1", false},
		} {
			c, ok := got[name]
			if !ok || c.Value == nil || *c.Value != want.value || (c.Source == kmsg.ConfigSourceDynamicTopicConfig) != want.dynamic {
				t.Errorf("DescribeConfigs %s: %+v, want %q (set on the topic: %v)", name, c, want.value, want.dynamic)
			}
		}
		if len(got) != len(kafkaTopicConfigs) {
			t.Errorf("DescribeConfigs listed %d configs, want all %d", len(got), len(kafkaTopicConfigs))
		}
	}
	check(ts)
	check(ts.restart(t))
}

// TestTopicConfigRefused: an unknown name or an invalid value is
// refused with INVALID_CONFIG naming it, and no topic is created.
func TestTopicConfigRefused(t *testing.T) {
	ts := startServer(t, t.TempDir())
	cl := newClient(t, ts.addr)
	for _, cfg := range [][2]string{{"min.cleanable.dirty.ratio", "2"}, {"cleanup.polcy", "compact"}} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bad", 1, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = cfg[0], kmsg.StringPtr(cfg[1])
		rt.Configs = append(rt.Configs, c)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Topics[0]
		if r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, cfg[0]) {
			t.Fatalf("%s=%s: error %d %v, want INVALID_CONFIG naming it", cfg[0], cfg[1], r.ErrorCode, r.ErrorMessage)
		}
	}
	if _, ok := ts.store.Topic("bad"); ok {
		t.Fatal("a topic with a bad config was created")
	}
}

// TestKafkaPythonCreatesCompactedTopic: kafka-python's admin client
// creates a compacted topic with min.cleanable.dirty.ratio (refused with
// INVALID_CONFIG before) and reads the configs back.
func TestKafkaPythonCreatesCompactedTopic(t *testing.T) {
	pythonKafka(t)
	ts := startServer(t, t.TempDir())
	out := runPython(t, `
import sys
from kafka.admin import KafkaAdminClient, NewTopic, ConfigResource, ConfigResourceType
a = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=20000)
a.create_topics([NewTopic("compacted", 1, 1, topic_configs={
    "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"})])
for res in a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "compacted")]):
    for r in res.resources:
        for c in r[4]:
            if c[0] in ("cleanup.policy", "min.cleanable.dirty.ratio", "segment.ms"):
                print("%s=%s" % (c[0], c[1]))
a.close()
`, ts.addr)
	for _, want := range []string{"cleanup.policy=compact", "min.cleanable.dirty.ratio=0.01", "segment.ms=100"} {
		if !strings.Contains(out, want+"\n") {
			t.Fatalf("kafka-python read back:\n%s\nwant %s", out, want)
		}
	}
	if info, ok := ts.store.Topic("compacted"); !ok || info.Config.Cleanup != storage.CleanupCompact {
		t.Fatalf("topic %+v (exists %v), want compacted", info, ok)
	}
}

// describeTopic returns a topic's configs by name, through
// DescribeConfigs.
func describeTopic(t *testing.T, ts *testServer, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = resourceTopic, topic
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), newClient(t, ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}
