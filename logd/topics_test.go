package logd

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsValidateOnly: CreateTopics with validate_only answers
// what the real create would — each of Kafka's refusals, and success for
// a valid topic — and creates nothing.
func TestCreateTopicsValidateOnly(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.Storage.MaxPartitions = 8
		c.MaxTopics = 2
	})
	cl := newClient(t, ts.addr)
	createTopic(t, cl, "exists", 1)
	for _, c := range []struct {
		what, topic string
		partitions  int32
		replicas    int16
		config      [2]string
		want        int16
	}{
		{"valid", "fine", 4, 1, [2]string{"cleanup.policy", "compact"}, 0},
		{"default partitions and replicas", "fine", -1, -1, [2]string{}, 0},
		{"existing topic", "exists", 1, 1, [2]string{}, kerr.TopicAlreadyExists.Code},
		{"invalid name", "bad name!", 1, 1, [2]string{}, kerr.InvalidTopicException.Code},
		{"name too long", strings.Repeat("a", 250), 1, 1, [2]string{}, kerr.InvalidTopicException.Code},
		{"no partitions", "fine", 0, 1, [2]string{}, kerr.InvalidPartitions.Code},
		{"above MaxPartitions", "fine", 9, 1, [2]string{}, kerr.InvalidPartitions.Code},
		{"three replicas", "fine", 1, 3, [2]string{}, kerr.InvalidReplicationFactor.Code},
		{"unknown config", "fine", 1, 1, [2]string{"cleanup.polcy", "compact"}, kerr.InvalidConfig.Code},
		{"bad config value", "fine", 1, 1, [2]string{"segment.ms", "0"}, kerr.InvalidConfig.Code},
	} {
		if got := createTopicsCode(t, cl, true, c.topic, c.partitions, c.replicas, c.config); got != c.want {
			t.Errorf("validate-only create, %s: error %d, want %d", c.what, got, c.want)
		}
	}
	if topics := ts.store.Topics(); len(topics) != 1 {
		t.Fatalf("validate-only creates left %d topics, want only the one created before", len(topics))
	}

	// At MaxTopics, validate-only is refused as the real create is.
	createTopic(t, cl, "second", 1)
	for _, validateOnly := range []bool{true, false} {
		if got := createTopicsCode(t, cl, validateOnly, "third", 1, 1, [2]string{}); got != kerr.PolicyViolation.Code {
			t.Errorf("create past MaxTopics (validate only: %v): error %d, want POLICY_VIOLATION", validateOnly, got)
		}
	}
}

// createTopicsCode sends one CreateTopics for topic (with one config
// entry when config names one) and returns its error code.
func createTopicsCode(t *testing.T, cl kmsg.Requestor, validateOnly bool, topic string, partitions int32, replicas int16, config [2]string) int16 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, replicas
	if config[0] != "" {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = config[0], kmsg.StringPtr(config[1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].ErrorCode
}
