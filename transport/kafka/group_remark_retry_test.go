package kafka

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRemarkCommitRetriesCoordinatorErrors: commitRemarks sends its own
// OffsetCommit, so the client's retries of a coordinator moving or
// loading (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) are not its:
// without its own, Close's kept marks are lost to a coordinator
// failover, and the next owner delivers again what was acknowledged.
// The cluster answers the first two commits of the kept mark (offset 7)
// with those errors, as a broker does while a coordinator moves.
func TestRemarkCommitRetriesCoordinatorErrors(t *testing.T) {
	c, addr := groupCluster(t, 1, "loss")
	cl := newClient(t, addr)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "loss", Value: fmt.Appendf(nil, "%d", i)})
	}
	codes := []int16{kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code}
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Offset != 7 {
			return nil, nil, false
		}
		n := refused.Add(1)
		if int(n) > len(codes) {
			return nil, nil, false
		}
		return refuseCommit(req, func(kmsg.OffsetCommitRequestTopicPartition) int16 { return codes[n-1] }), nil, true
	})
	g, err := NewGroupSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "loss", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour)}, groupOpts...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	stream := messages(receiveUntil(t, g, untilMessages(10)))[0].Stream
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	rs := remarkSet{offsets: map[int32]kgo.EpochOffset{stream.Partition: {Epoch: -1, Offset: 7}}}
	rs.member, rs.gen = g.cl.GroupMetadata()
	err = g.commitRemarks(ctx, rs)
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 7 || err != nil {
		t.Fatalf("kept mark 7 refused first with COORDINATOR_LOAD_IN_PROGRESS, then NOT_COORDINATOR: commitRemarks returned %v, the group's commit is %d (%d commits of it refused)", err, c, refused.Load())
	}
}
