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

// TestPeriodicRemarkCommitDoesNotStallReceive: the periodic commit of
// kept marks holds rewindMu, which take (every Receive that polled)
// waits for: it tries once, and leaves a retriable refusal
// (COORDINATOR_LOAD_IN_PROGRESS, here for as long as the test runs) to
// the next interval, rather than retrying for seconds while the
// records of other partitions wait.
func TestPeriodicRemarkCommitDoesNotStallReceive(t *testing.T) {
	c, addr := groupCluster(t, 2, "loss")
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "loss", Partition: 0, Value: fmt.Appendf(nil, "%d", i)})
	}
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := refuseCommit(kr.(*kmsg.OffsetCommitRequest), func(p kmsg.OffsetCommitRequestTopicPartition) int16 {
			if p.Partition == 0 && p.Offset == 10 {
				refused.Add(1)
			}
			return kerr.CoordinatorLoadInProgress.Code
		})
		return resp, nil, true
	})
	const interval = 100 * time.Millisecond
	g, err := NewGroupSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "loss", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(interval)}, groupOpts...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	stream := messages(receiveUntil(t, g, untilMessages(10)))[0].Stream
	g.mu.Lock()
	g.parts[stream.Partition].fetching = true // given back, nothing fetched since
	g.mu.Unlock()
	if err := g.Ack(context.Background(), stream, 9); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testDeadline)
	for refused.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	produce(t, cl, &kgo.Record{Topic: "loss", Partition: 1, Value: []byte("other")})
	receiveUntil(t, g, untilMessages(1))
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a record of another partition took %v to be received while the periodic commit of a kept mark was refused as retriable", d.Round(time.Millisecond))
	}
}
