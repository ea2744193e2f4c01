package logd

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// createTopics creates topics with their partition counts and config
// overrides. A replication factor other than 1 (or -1, the default) is
// refused: this is a single node. With validate_only each topic is
// checked exactly as for a real create, and nothing is created.
func (s *Server) createTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		partitions := t.NumPartitions
		if partitions == -1 {
			partitions = s.cfg.DefaultPartitions
		}
		rt.NumPartitions, rt.ReplicationFactor = partitions, 1
		err := s.createTopic(t, partitions, req.ValidateOnly)
		rt.ErrorCode = errorCode(err)
		if err != nil {
			msg := err.Error()
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) createTopic(t kmsg.CreateTopicsRequestTopic, partitions int32, validateOnly bool) error {
	switch {
	case t.ReplicationFactor != -1 && t.ReplicationFactor != 1:
		return fmt.Errorf("%w: a single node holds one replica", kerr.InvalidReplicationFactor)
	case len(t.ReplicaAssignment) > 0:
		return fmt.Errorf("%w: a single node has nothing to assign", kerr.InvalidReplicaAssignment)
	case partitions < 1:
		return fmt.Errorf("%w: %d partitions", kerr.InvalidPartitions, partitions)
	}
	entries := make(map[string]*string, len(t.Configs))
	for _, c := range t.Configs {
		entries[c.Name] = c.Value
	}
	tc, err := parseTopicConfig(entries)
	if err != nil {
		return err
	}
	if validateOnly {
		// Kafka validates as for a real create and creates nothing.
		if err := s.checkTopicRoom(); err != nil {
			return err
		}
		return s.store.CheckCreateTopic(t.Topic, int(partitions), tc)
	}
	kept := s.newlyKeptConfigs(tc)
	if err := s.newTopic(t.Topic, int(partitions), tc); err != nil {
		return err
	}
	s.cfg.Logger.Info("logd: created topic", "topic", t.Topic, "partitions", partitions)
	for _, name := range kept {
		s.cfg.Logger.Info("logd: topic config kept and shown, not applied", "config", name, "topic", t.Topic,
			"applied", AppliedTopicConfigs())
	}
	return nil
}

// newlyKeptConfigs returns the Kafka configs of tc that logd keeps but
// does not apply and that no existing topic has set: each is logged
// once, when the first topic that sets it is created.
func (s *Server) newlyKeptConfigs(tc storage.TopicConfig) []string {
	seen := map[string]bool{}
	for _, info := range s.store.Topics() {
		for name := range info.Overrides.Kafka {
			seen[name] = true
		}
	}
	var out []string
	for name := range tc.Kafka {
		if !seen[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Server) deleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	names := req.TopicNames
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		err := s.store.DeleteTopic(name)
		rt.ErrorCode = errorCode(err)
		if err == nil {
			s.cfg.Logger.Info("logd: deleted topic", "topic", name)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Kafka's DescribeConfigs resource types.
const (
	resourceTopic  = 2
	resourceBroker = 4
)

// describeConfigs reports topics' configs — every Kafka topic config:
// what logd applies, what the topic keeps, Kafka's defaults — and a few
// broker settings, so admin tools can read them.
func (s *Server) describeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	type resource struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	seen := make(map[resource]bool, len(req.Resources))
	for _, r := range req.Resources {
		// A resource named several times is described once, where first
		// named (Kafka describes it at every mention): a description
		// lists every config, some 2 KB, for 8 bytes a mention.
		if seen[resource{r.ResourceType, r.ResourceName}] {
			continue
		}
		seen[resource{r.ResourceType, r.ResourceName}] = true
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		var configs []kmsg.DescribeConfigsResponseResourceConfig
		switch r.ResourceType {
		case resourceTopic:
			info, ok := s.store.Topic(r.ResourceName)
			if !ok {
				rr.ErrorCode = errorCode(storage.ErrUnknownTopicOrPartition)
				break
			}
			configs = topicConfigEntries(info)
		case resourceBroker:
			configs = brokerConfigEntries(map[string]string{
				"auto.create.topics.enable":    strconv.FormatBool(!s.cfg.DisableAutoCreateTopics),
				"num.partitions":               strconv.Itoa(int(s.cfg.DefaultPartitions)),
				"socket.request.max.bytes":     strconv.Itoa(s.cfg.MaxRequestBytes),
				"group.min.session.timeout.ms": strconv.FormatInt(s.cfg.MinSessionTimeout.Milliseconds(), 10),
				"group.max.session.timeout.ms": strconv.FormatInt(s.cfg.MaxSessionTimeout.Milliseconds(), 10),
			})
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
		}
		for _, c := range configs {
			if len(r.ConfigNames) == 0 || slices.Contains(r.ConfigNames, c.Name) {
				rr.Configs = append(rr.Configs, c)
			}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// brokerConfigEntries describes broker settings: read-only, as set.
func brokerConfigEntries(values map[string]string) []kmsg.DescribeConfigsResponseResourceConfig {
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(values))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly = name, kmsg.StringPtr(values[name]), true
		c.Source = kmsg.ConfigSourceStaticBrokerConfig
		out = append(out, c)
	}
	return out
}
