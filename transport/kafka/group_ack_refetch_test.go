package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// TestAckBeforeOffsetsRefetched: a rebalance takes a member's
// partitions and gives one back (eager: all are revoked, then
// reassigned), and the member acknowledges an offset of it that it
// delivered before, while the group's commit for it is being fetched
// again (the broker holds that fetch here). Ack returns nil; Close's
// commit must then carry it (the group committed nothing else for the
// partition meanwhile): an acknowledgement that returned nil is in the
// next commit, Close's included.
func TestAckBeforeOffsetsRefetched(t *testing.T) {
	c, addr := groupCluster(t, 2, "back")
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		for i := range 10 {
			produce(t, cl, &kgo.Record{Topic: "back", Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	// Every OffsetFetch after the first (a's, when it joins) is held
	// until released.
	inFlight, held := make(chan struct{}), make(chan struct{})
	var once, inFlightOnce sync.Once
	release := func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	var fetches atomic.Int32
	c.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if fetches.Add(1) > 1 {
			inFlightOnce.Do(func() { close(inFlight) })
			c.SleepControl(func() { <-held })
		}
		return nil, nil, false
	})
	ctx := context.Background()
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.Balancers(kgo.RangeBalancer())}, groupOpts...)
	cfg := Config{Brokers: []string{addr}, Topic: "back", Group: "g", Options: opts}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	receiveUntil(t, a, untilMessages(20))
	// b joins: a's partitions are revoked, and one given back.
	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	go func() {
		for bctx.Err() == nil {
			b.Receive(bctx)
		}
	}()
	wait(t, inFlight, "the offset fetch after the rebalance")
	var back int32 = -1
	for deadline := time.Now().Add(testDeadline); back < 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		a.mu.Lock()
		for p, st := range a.parts {
			if st.owned {
				back = p
			}
		}
		a.mu.Unlock()
	}
	if back < 0 {
		t.Fatal("no partition given back to a")
	}
	stream := transport.StreamID{Topic: "back", Partition: back}
	ackErr := a.Ack(ctx, stream, 9)
	t.Logf("Ack before the offsets are fetched: %v", ackErr)
	release()
	time.Sleep(500 * time.Millisecond) // for a to take the offsets fetched
	bcancel()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, addr, "g", "back", back); ackErr == nil && got != 10 {
		t.Fatalf("the Ack of offset 9 of partition %d, made before its offsets were fetched again, returned nil; Close committed %d, not 10", back, got)
	}
}

// TestDataLossDropsRemarkPastResetPoint: an Ack's mark kept while the
// client did not take marks (partition.remark), past the reset point of
// a data loss reported before the partition's first records, is not
// made: the loss commits its reset point, and a later commit of the
// kept mark would skip the records the broker holds from there on.
func TestDataLossDropsRemarkPastResetPoint(t *testing.T) {
	st := &partition{started: true, next: 10, delivered: 10, owned: true, fetching: true, floor: 10,
		remark: kgo.EpochOffset{Epoch: -1, Offset: 10}}
	if !st.lose(6) {
		t.Fatal("lose(6) with floor 10: no rewind")
	}
	if st.remark.Offset > 6 {
		t.Fatalf("after a loss reset to 6, the kept mark is %d: committed, it skips offsets 6..%d", st.remark.Offset, st.remark.Offset-1)
	}
}
