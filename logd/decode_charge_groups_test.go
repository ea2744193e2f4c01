package logd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupRequestsOfLargeMetadata: a member subscribing to 3000 topics
// joins with a 100 KiB JoinGroup, and its leader syncs assignments of
// as much, on a server with the least request memory the configuration
// allows (twice MaxRequestBytes of 2 MiB): both are answered. Their
// metadata and assignments are bytes decoding does not copy; charged 64
// times their frame (6.4 MiB) they closed the connection.
func TestGroupRequestsOfLargeMetadata(t *testing.T) {
	ts := startServer(t, t.TempDir(), func(c *Config) {
		c.MaxRequestBytes = 2 << 20
		c.MaxInFlightRequestBytes = 4 << 20
	})
	cl := newClient(t, ts.addr)
	meta := kmsg.NewConsumerMemberMetadata()
	for i := range 3000 {
		meta.Topics = append(meta.Topics, fmt.Sprintf("topic-of-a-large-deployment-%05d", i))
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(7)
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "g", 30000, 30000, "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(5)
	sync.Group, sync.Generation, sync.MemberID = "g", 1, "m"
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	assignment := kmsg.NewConsumerMemberAssignment()
	for _, topic := range meta.Topics {
		assignment.Topics = append(assignment.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: topic, Partitions: []int32{0}})
	}
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: assignment.AppendTo(nil)}}
	for _, req := range []kmsg.Request{join, sync} {
		name := kmsg.NameForKey(req.Key())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp, err := cl.Broker(0).Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s of %d KiB: %v", name, len(req.AppendTo(nil))>>10, err)
		}
		var code int16
		switch r := resp.(type) {
		case *kmsg.JoinGroupResponse:
			code = r.ErrorCode // a new member is given its id first
			if code == kerr.MemberIDRequired.Code {
				code = 0
			}
		case *kmsg.SyncGroupResponse:
			code = r.ErrorCode // no such member
			if code == kerr.UnknownMemberID.Code {
				code = 0
			}
		}
		if code != 0 {
			t.Fatalf("%s: error %v", name, kerr.ErrorForCode(code))
		}
	}
}
