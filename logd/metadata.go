package logd

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage"
)

// metadata names this broker as the whole cluster — leader of every
// partition, controller and coordinator — and lists the topics asked
// for (all when the request names none), creating unknown ones when
// auto-creation is on and the client allows it.
func (s *Server) metadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: nodeID, Host: s.host, Port: s.port}}
	resp.ClusterID = &s.cluster
	resp.ControllerID = nodeID
	allowCreate := req.AllowAutoTopicCreation || req.Version < 4
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)

	var names []string
	if all {
		for _, t := range s.store.Topics() {
			names = append(names, t.Name)
		}
	} else {
		// Each topic once, however often the request names it (Kafka
		// takes them as a set): a topic of many partitions named
		// thousands of times would be listed as often.
		seen := make(map[string]bool, len(req.Topics))
		names = make([]string, 0, len(req.Topics))
		for _, t := range req.Topics {
			if t.Topic != nil && !seen[*t.Topic] {
				seen[*t.Topic] = true
				names = append(names, *t.Topic)
			}
		}
	}
	// Made at its size: grown by append, a large slice is copied at
	// every quarter, allocating about 5 times its final size.
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(names))
	for _, name := range names {
		resp.Topics = append(resp.Topics, s.topicMetadata(name, allowCreate && !all))
	}
	return resp
}

func (s *Server) topicMetadata(name string, create bool) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr(name)
	n, err := s.partitions(name)
	if errors.Is(err, storage.ErrUnknownTopicOrPartition) && create && !s.cfg.DisableAutoCreateTopics {
		if err = s.autoCreate(name); err == nil {
			n, err = s.partitions(name)
		}
	}
	if err != nil {
		t.ErrorCode = errorCode(err)
		return t
	}
	for p := int32(0); p < n; p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = nodeID
		mp.Replicas = []int32{nodeID}
		mp.ISR = []int32{nodeID}
		t.Partitions = append(t.Partitions, mp)
	}
	return t
}

// partitions is the partition count of a topic.
func (s *Server) partitions(topic string) (int32, error) {
	t, ok := s.store.Topic(topic)
	if !ok {
		return 0, storage.ErrUnknownTopicOrPartition
	}
	return int32(t.Partitions), nil
}

func (s *Server) partitionExists(topic string, partition int32) bool {
	n, err := s.partitions(topic)
	return err == nil && partition >= 0 && partition < n
}

// autoCreate creates a topic with the default partition count; losing a
// race with another creator is fine.
func (s *Server) autoCreate(topic string) error {
	err := s.newTopic(topic, int(s.cfg.DefaultPartitions), storage.TopicConfig{})
	if errors.Is(err, storage.ErrTopicExists) {
		return nil
	}
	if err == nil {
		s.cfg.Logger.Info("logd: created topic", "topic", topic, "partitions", s.cfg.DefaultPartitions, "auto", true)
	}
	return err
}

// newTopic creates a topic unless MaxTopics are there already.
func (s *Server) newTopic(name string, partitions int, tc storage.TopicConfig) error {
	if err := s.checkTopicRoom(); err != nil {
		s.metrics.topicsRefused.Add(1)
		return err
	}
	if err := s.store.CreateTopic(name, partitions, tc); err != nil {
		return err
	}
	s.topicsAdded.wake()
	return nil
}

// checkTopicRoom: the server holds fewer than MaxTopics topics.
func (s *Server) checkTopicRoom() error {
	if len(s.store.Topics()) >= s.cfg.MaxTopics {
		return fmt.Errorf("%w: %d topics, the most this server holds (MaxTopics)", kerr.PolicyViolation, s.cfg.MaxTopics)
	}
	return nil
}

// findCoordinator: this broker coordinates every group (and would every
// transaction).
func (s *Server) findCoordinator(req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Host, c.Port = key, nodeID, s.host, s.port
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
	resp.NodeID, resp.Host, resp.Port = nodeID, s.host, s.port
	return resp
}

// errorCode maps a storage or validation error to its Kafka error code.
func errorCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, storage.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, storage.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, storage.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, storage.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, ErrInvalidConfig), errors.Is(err, storage.ErrBadConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, storage.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, storage.ErrInvalidBatch):
		return kerr.InvalidRecord.Code
	}
	return kerr.KafkaStorageError.Code
}
