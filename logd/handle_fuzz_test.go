package logd

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSeeds returns one request of each API the server speaks, at
// every version it speaks, naming a topic, partitions and a group that
// exist (and some that do not), as whole frames without their size.
func handleSeeds() [][]byte {
	str := func(s string) *string { return &s }
	var reqs []kmsg.Request

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 100
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	for p := range int32(3) {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p-1, recordBatch([]byte("a"), []byte("b"))
		pt.Partitions = append(pt.Partitions, pp)
	}
	produce.Topics = append(produce.Topics, pt)
	reqs = append(reqs, produce)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 10, 1, 100
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	for p := range int32(3) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p-1, int64(p), 50
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	reqs = append(reqs, fetch)

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	for i, ts := range []int64{-1, -2, -3, 0, 1 << 50} {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.MaxNumOffsets = int32(i%2), ts, 1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	reqs = append(reqs, lo)

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = str("t")
	md.Topics = append(md.Topics, mt)
	reqs = append(reqs, md)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "t"
	ocp := kmsg.NewOffsetCommitRequestTopicPartition()
	ocp.Offset, ocp.Metadata = 1, str("m")
	oct.Partitions = append(oct.Partitions, ocp)
	oc.Topics = append(oc.Topics, oct)
	reqs = append(reqs, oc)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	oft := kmsg.NewOffsetFetchRequestTopic()
	oft.Topic, oft.Partitions = "t", []int32{0, 1}
	of.Topics = append(of.Topics, oft)
	reqs = append(reqs, of)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g", "h"}
	reqs = append(reqs, fc)

	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", 6000, 100
	join.ProtocolType = "consumer"
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, jp)
	reqs = append(reqs, join)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	reqs = append(reqs, hb)

	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group, lg.MemberID = "g", "m"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "m"
	lg.Members = append(lg.Members, lm)
	reqs = append(reqs, lg)

	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.ProtocolType, sg.Protocol = "g", "m", str("consumer"), str("range")
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID = "m"
	sg.GroupAssignment = append(sg.GroupAssignment, sa)
	reqs = append(reqs, sg)

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g", "h"}
	reqs = append(reqs, dg, kmsg.NewPtrListGroupsRequest(), kmsg.NewPtrApiVersionsRequest())

	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "n", 2, 1
	cc := kmsg.NewCreateTopicsRequestTopicConfig()
	cc.Name, cc.Value = "cleanup.policy", str("compact")
	ctt.Configs = append(ctt.Configs, cc)
	ct.Topics = append(ct.Topics, ctt)
	reqs = append(reqs, ct)

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"n"}
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = str("n")
	dt.Topics = append(dt.Topics, dtt)
	reqs = append(reqs, dt, kmsg.NewPtrInitProducerIDRequest())

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dcr := kmsg.NewDescribeConfigsRequestResource()
	dcr.ResourceType, dcr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	dc.Resources = append(dc.Resources, dcr)
	reqs = append(reqs, dc)

	var frames [][]byte
	for _, r := range reqs {
		vr := supported[kmsg.Key(r.Key())]
		for v := vr.min; v <= vr.max; v++ {
			r.SetVersion(v)
			frames = append(frames, kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, r, 1)[4:])
		}
	}
	return frames
}

// FuzzHandleRequest: no request frame, however its fields are mutated,
// panics or hangs the server: each is sent to a running server on a
// connection of its own, and the server must answer the next
// connection's ApiVersions.
func FuzzHandleRequest(f *testing.F) {
	for _, frame := range handleSeeds() {
		f.Add(frame)
	}
	ts := startServer(f, f.TempDir(), func(c *Config) {
		c.IdleTimeout = 200 * time.Millisecond
		c.RequestTimeout = time.Second
		c.MinSessionTimeout = 100 * time.Millisecond
		c.MaxRebalanceTimeout = 200 * time.Millisecond
		c.MaxConnectionsPerIP = 1024
	})
	if err := ts.autoCreate("t"); err != nil {
		f.Fatal(err)
	}
	exchange := func(t *testing.T, frame []byte) error {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err != nil {
			return err
		}
		_, err = readFrame(c)
		return err
	}
	api := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 0)[4:]
	f.Fuzz(func(t *testing.T, frame []byte) {
		_ = exchange(t, frame) // answered, or the connection closed
		if err := exchange(t, api); err != nil {
			t.Fatalf("the server did not answer ApiVersions after the frame %x: %v", frame, err)
		}
	})
}
