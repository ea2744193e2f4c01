package logd

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsetsOfManyPartitionsAnswered: a consumer asks the offsets
// of every partition of two 1000-partition topics (a 32 KiB ListOffsets)
// on a server with the least request memory the configuration allows
// (twice MaxRequestBytes of 2 MiB): it is answered, and what decoding
// and answering it allocates is within its charge. At 160 times its
// frame (5 MiB) it closed the connection.
func TestListOffsetsOfManyPartitionsAnswered(t *testing.T) {
	ts, cl, topics := manyPartitionsServer(t)
	const partitions = manyPartitionsPerTopic
	for _, v := range []int16{0, 1, 4, 7} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(v)
		for _, topic := range topics {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for p := range int32(partitions) {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.MaxNumOffsets = p, latestTimestamp, 1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := answerManyPartitions(t, ts, cl, "ListOffsets", req, len(topics)*partitions)
		for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
			if len(rt.Partitions) != partitions || rt.Partitions[0].ErrorCode != 0 {
				t.Fatalf("ListOffsets v%d: %d partitions of %s answered, first error %d", v, len(rt.Partitions), rt.Topic, rt.Partitions[0].ErrorCode)
			}
		}
	}
}

// smallBudgetServer starts a server with the least request memory the
// configuration allows (twice MaxRequestBytes of 2 MiB).
func smallBudgetServer(t *testing.T) *testServer {
	return startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 2 << 20
		c.MaxInFlightRequestBytes = 4 << 20
		c.DisableAutoCreateTopics = true
	})
}

// checkCharge fails t when what decoding req, handling it on ts and
// encoding its answer allocate is more than its charge (not measured
// under the race detector, which enlarges allocations).
func checkCharge(t *testing.T, ts *testServer, name string, req kmsg.Request) {
	t.Helper()
	frame := requestFrame(req)
	charge, err := decodeCharge(frame)
	if err != nil {
		t.Fatal(err)
	}
	if charge > ts.decodeMem.limit {
		t.Fatalf("%s v%d: %d bytes charged %d, more than the budget (%d)", name, req.GetVersion(), len(frame), charge, ts.decodeMem.limit)
	}
	if !raceEnabled {
		if got := answerAllocated(t, ts, frame); got > charge {
			t.Errorf("%s v%d: answering %d bytes allocated %d, charged %d", name, req.GetVersion(), len(frame), got, charge)
		}
	}
}

// TestCreateTopicsOfManyTopicsAnswered: a CreateTopics validating 1000
// topics (a 27 KiB frame), and one of a topic with 10000 distinct
// configs, on a server with the least request memory the configuration
// allows: each is answered, within its charge. At 256 times its frame
// (6.7 MiB) the first closed the connection.
func TestCreateTopicsOfManyTopicsAnswered(t *testing.T) {
	ts := smallBudgetServer(t)
	cl := newClient(t, ts.addr)
	for _, v := range []int16{1, 4, 5, 7} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		req.ValidateOnly = true
		for i := range 1000 {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("validate-%04d", i), 1, 1
			req.Topics = append(req.Topics, rt)
		}
		checkCharge(t, ts, "CreateTopics of 1000 topics", req)
		resp, err := requestWithin(cl, req)
		if err != nil {
			t.Fatalf("CreateTopics v%d of 1000 topics: %v", v, err)
		}
		if got := resp.(*kmsg.CreateTopicsResponse).Topics; len(got) != 1000 || got[0].ErrorCode != 0 {
			t.Fatalf("CreateTopics v%d of 1000 topics: %d answered, first error %d", v, len(got), got[0].ErrorCode)
		}
		configs := kmsg.NewPtrCreateTopicsRequest()
		configs.SetVersion(v)
		configs.ValidateOnly = true
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "configs", 1, 1
		for i := range 10000 {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = fmt.Sprintf("x.%05d", i), kmsg.StringPtr("1")
			rt.Configs = append(rt.Configs, c)
		}
		configs.Topics = append(configs.Topics, rt)
		checkCharge(t, ts, "CreateTopics of 10000 configs", configs)
	}
}

// TestDescribeGroupsOfManyGroupsAnswered: a DescribeGroups naming 6000
// groups (a 78 KiB frame) on a server with the least request memory
// the configuration allows is answered, within its charge. At 64 times
// its frame (5 MiB) it closed the connection.
func TestDescribeGroupsOfManyGroupsAnswered(t *testing.T) {
	ts := smallBudgetServer(t)
	cl := newClient(t, ts.addr)
	for _, v := range []int16{0, 3, 5} {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(v)
		for i := range 6000 {
			req.Groups = append(req.Groups, fmt.Sprintf("group-%05d", i))
		}
		checkCharge(t, ts, "DescribeGroups of 6000 groups", req)
		resp, err := requestWithin(cl, req)
		if err != nil {
			t.Fatalf("DescribeGroups v%d of 6000 groups: %v", v, err)
		}
		if got := len(resp.(*kmsg.DescribeGroupsResponse).Groups); got != 6000 {
			t.Fatalf("DescribeGroups v%d of 6000 groups: %d answered", v, got)
		}
	}
}
