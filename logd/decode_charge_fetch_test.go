package logd

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchOfManyPartitionsAnswered: a consumer's Fetch of every
// partition of two 1000-partition topics (a 64 KiB frame) is answered
// with the smallest request memory the configuration allows (twice
// MaxRequestBytes of 2 MiB): what decoding and answering it allocates
// is counted by its topics and partitions, not guessed at 192 times
// its frame (12 MiB, which closed the connection); what answering it
// allocates is within that charge.
func TestFetchOfManyPartitionsAnswered(t *testing.T) {
	ts, cl, topics := manyPartitionsServer(t)
	const partitions = manyPartitionsPerTopic
	for _, v := range []int16{4, 11, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
		for _, topic := range topics {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			for p := range int32(partitions) {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = p, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := answerManyPartitions(t, ts, cl, "Fetch", req, len(topics)*partitions)
		for _, rt := range resp.(*kmsg.FetchResponse).Topics {
			if got := len(rt.Partitions); got != partitions {
				t.Fatalf("Fetch v%d: %d partitions of %s answered, want %d", v, got, rt.Topic, partitions)
			}
		}
	}
}
