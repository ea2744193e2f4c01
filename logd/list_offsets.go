package logd

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Special ListOffsets timestamps.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
	maxTimestamp      = -3 // v7+
)

// listOffsets answers earliest (-2), latest (-1), max timestamp (-3,
// v7+: the first record with the partition's largest timestamp) or the
// first offset at or after a timestamp. Another negative timestamp, or
// -3 before v7, is answered UNSUPPORTED_VERSION, as by Kafka
// (ReplicaManager.isListOffsetsTimestampUnsupported), not searched for as
// a time. v0 answers with the old offset array.
func (s *Server) listOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if !timestampSupported(p.Timestamp, req.Version) {
				rp.ErrorCode = kerr.UnsupportedVersion.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			offset, ts, err := s.offsetFor(t.Topic, p.Partition, p.Timestamp)
			rp.ErrorCode = errorCode(err)
			if err == nil {
				rp.Offset, rp.Timestamp = offset, ts
				if req.Version == 0 && offset >= 0 {
					rp.OldStyleOffsets = []int64{offset}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// timestampSupported: ts is a time, or a special timestamp that version
// v of ListOffsets knows.
func timestampSupported(ts int64, v int16) bool {
	switch {
	case ts >= 0, ts == latestTimestamp, ts == earliestTimestamp:
		return true
	case ts == maxTimestamp:
		return v >= 7
	}
	return false
}

// offsetFor resolves one ListOffsets query: the offset and the found
// record's timestamp; a timestamp past every record gives -1, -1, as
// Kafka does.
func (s *Server) offsetFor(topic string, partition int32, ts int64) (int64, int64, error) {
	log, err := s.store.Partition(topic, partition)
	if err != nil {
		return -1, -1, err
	}
	switch ts {
	case latestTimestamp:
		return log.HighWatermark(), -1, nil
	case earliestTimestamp:
		return log.StartOffset(), -1, nil
	case maxTimestamp:
		if ts, err = log.MaxTimestamp(); err != nil {
			return -1, -1, err
		}
	}
	return log.OffsetForTime(ts)
}
