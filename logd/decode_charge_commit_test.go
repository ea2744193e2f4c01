package logd

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetCommitOfManyPartitionsAnswered: a consumer commits its
// offsets of every partition of two 1000-partition topics (a 36 KiB
// OffsetCommit v8) on a server with the least request memory the
// configuration allows (twice MaxRequestBytes of 2 MiB): it is
// answered, and what decoding and answering it allocates is within its
// charge. At 192 times its frame (6.9 MiB) it closed the connection.
func TestOffsetCommitOfManyPartitionsAnswered(t *testing.T) {
	ts, cl, topics := manyPartitionsServer(t)
	const partitions = manyPartitionsPerTopic
	for i, v := range []int16{2, 6, 8} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(v)
		req.Group, req.Generation = "g", -1 // a group of no members: a simple consumer's commit
		for _, topic := range topics {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for p := range int32(partitions) {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, int64(i)
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := answerManyPartitions(t, ts, cl, "OffsetCommit", req, len(topics)*partitions)
		for _, rt := range resp.(*kmsg.OffsetCommitResponse).Topics {
			if len(rt.Partitions) != partitions || rt.Partitions[0].ErrorCode != 0 {
				t.Fatalf("OffsetCommit v%d: %d partitions of %s answered, first error %d", v, len(rt.Partitions), rt.Topic, rt.Partitions[0].ErrorCode)
			}
		}
	}
}
