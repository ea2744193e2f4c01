package logd

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzScanAgrees: the scans that charge a Produce, a Fetch, an
// OffsetCommit, a JoinGroup, a SyncGroup, a ListOffsets, a CreateTopics
// or a DescribeGroups by its elements agree with kmsg on any frame: a
// frame kmsg decodes is not refused, and is charged at least for what it
// decoded into (a scan stopping short would charge too little).
func FuzzScanAgrees(f *testing.F) {
	format := kmsg.NewRequestFormatter(kmsg.FormatterClientID("c"))
	for _, v := range []int16{3, 7, 9} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.ProduceRequestTopic{
			{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: []byte{1, 2}}, {}}},
			{Topic: "u", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3}, {Partition: 4}, {Partition: 5}}},
		}
		req.Topics[0].UnknownTags.Set(99, []byte{7})
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{4, 7, 11, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		for i, n := range []int{2, 3} {
			rt := kmsg.FetchRequestTopic{Topic: string(rune('t' + i))}
			for p := range n {
				rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{
					Partition: int32(p), CurrentLeaderEpoch: 5, FetchOffset: 0x0102030405060708,
					LastFetchedEpoch: 6, LogStartOffset: -1, PartitionMaxBytes: 1 << 20,
				})
			}
			req.Topics = append(req.Topics, rt)
		}
		req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "f", Partitions: []int32{1, 2}}}
		req.Rack = "r"
		req.UnknownTags.Set(99, []byte{7})
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{0, 5, 6, 7} {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(v)
		req.Group, req.MemberID, req.ProtocolType = "g", "m", "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{1, 2, 3}}, {Name: "sticky"}}
		req.UnknownTags.Set(99, []byte{7})
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{0, 3, 4, 5} {
		req := kmsg.NewPtrSyncGroupRequest()
		req.SetVersion(v)
		req.Group, req.MemberID = "g", "m"
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: []byte{1, 2}}, {MemberID: "n"}}
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{2, 5, 6, 7, 8} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(v)
		req.Group, req.MemberID, req.InstanceID = "g", "m", kmsg.StringPtr("i")
		for i, n := range []int{2, 3} {
			rt := kmsg.OffsetCommitRequestTopic{Topic: string(rune('t' + i))}
			for p := range n {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{
					Partition: int32(p), Offset: 0x0102030405060708, LeaderEpoch: 5, Metadata: kmsg.StringPtr("md"),
				})
			}
			req.Topics = append(req.Topics, rt)
		}
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{0, 2, 4, 6, 7} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(v)
		req.IsolationLevel = 1
		for i, n := range []int{2, 3} {
			rt := kmsg.ListOffsetsRequestTopic{Topic: string(rune('t' + i))}
			for p := range n {
				rt.Partitions = append(rt.Partitions, kmsg.ListOffsetsRequestTopicPartition{
					Partition: int32(p), CurrentLeaderEpoch: 5, Timestamp: -1, MaxNumOffsets: 1,
				})
			}
			req.Topics = append(req.Topics, rt)
		}
		req.UnknownTags.Set(99, []byte{7})
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{0, 1, 4, 5, 7} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		req.TimeoutMillis, req.ValidateOnly = 1000, true
		req.Topics = []kmsg.CreateTopicsRequestTopic{
			{Topic: "t", NumPartitions: 2, ReplicationFactor: 1, Configs: []kmsg.CreateTopicsRequestTopicConfig{
				{Name: "retention.ms", Value: kmsg.StringPtr("1")}, {Name: "cleanup.policy"},
			}},
			{Topic: "u", NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{
				{Partition: 0, Replicas: []int32{0, 1}}, {Partition: 1},
			}},
		}
		req.UnknownTags.Set(99, []byte{7})
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	for _, v := range []int16{0, 3, 5} {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{"g", "h", ""}
		req.IncludeAuthorizedOperations = true
		req.UnknownTags.Set(99, []byte{7})
		f.Add(format.AppendRequest(nil, req, 1)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := decodeRequest(frame)
		if err != nil || req.body == nil {
			return
		}
		var want int64
		switch body := req.body.(type) {
		case *kmsg.ProduceRequest:
			want = requestCost + int64(len(body.Topics))*produceTopicCost
			for _, t := range body.Topics {
				want += int64(len(t.Partitions)) * producePartitionCost
			}
		case *kmsg.FetchRequest:
			want = requestCost + int64(len(body.Topics))*fetchTopicCost + int64(len(body.ForgottenTopics))*fetchForgottenTopicCost
			for _, t := range body.Topics {
				want += int64(len(t.Partitions)) * fetchPartitionCost
			}
			for _, t := range body.ForgottenTopics {
				want += int64(len(t.Partitions)) * fetchForgottenPartitionCost
			}
		case *kmsg.OffsetCommitRequest:
			want = requestCost + int64(len(body.Topics))*commitTopicCost
			for _, t := range body.Topics {
				want += int64(len(t.Partitions)) * commitPartitionCost
			}
		case *kmsg.JoinGroupRequest:
			want = requestCost + int64(len(body.Protocols))*groupElementCost
			for _, p := range body.Protocols {
				want += int64(len(p.Metadata))
			}
		case *kmsg.SyncGroupRequest:
			want = requestCost + int64(len(body.GroupAssignment))*groupElementCost
			for _, a := range body.GroupAssignment {
				want += int64(len(a.MemberAssignment))
			}
		case *kmsg.ListOffsetsRequest:
			want = requestCost + int64(len(body.Topics))*listOffsetsTopicCost
			for _, t := range body.Topics {
				want += int64(len(t.Partitions)) * listOffsetsPartitionCost
			}
		case *kmsg.CreateTopicsRequest:
			want = requestCost + int64(len(body.Topics))*createTopicCost
			for _, t := range body.Topics {
				want += int64(len(t.ReplicaAssignment))*createAssignmentCost + int64(len(t.Configs))*createConfigCost
				for _, a := range t.ReplicaAssignment {
					want += 4 * int64(len(a.Replicas))
				}
			}
		case *kmsg.DescribeGroupsRequest:
			want = requestCost + int64(len(body.Groups))*describeGroupCost
		default:
			return
		}
		charge, err := decodeCharge(frame)
		if err != nil {
			t.Fatalf("kmsg decodes %x, the scan refuses it: %v", frame, err)
		}
		if charge < want {
			t.Fatalf("%x: charged %d, its topics and partitions cost %d", frame, charge, want)
		}
	})
}
