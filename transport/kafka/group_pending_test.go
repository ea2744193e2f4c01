package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestRevokedPendingDeliveredAgain: a rebalance that revokes a
// partition while the message of its first record waits behind the
// partition's StreamStart (Receive returned the StreamStart only) drops
// that message; when the partition comes back to the member — at once,
// as an eager rebalance gives back what it keeps, or after the other
// member left — the member delivers it, and does not skip it as
// delivered already.
func TestRevokedPendingDeliveredAgain(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "pending", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		produce(t, cl, &kgo.Record{Topic: "pending", Partition: 0, Value: fmt.Appendf(nil, "%d", i)})
	}
	ctx := context.Background()
	// An eager balancer revokes every partition at each rebalance.
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.Balancers(kgo.RangeBalancer())}, groupOpts...)
	cfg := Config{Brokers: []string{addr}, Topic: "pending", Group: "g", Options: opts}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	evs := receiveUntil(t, a, func(evs []transport.Event) bool { return len(evs) == 1 })
	if evs[0].Kind != transport.EventStreamStart || evs[0].Start.Stream.Partition != 0 {
		t.Fatalf("a's first event: %v %+v, want partition 0's StreamStart", evs[0].Kind, evs[0].Start)
	}

	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testDeadline)
	for a.Stats().Disowned == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a's pending message was not dropped by the rebalance b's join caused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Close(); err != nil { // nothing acknowledged: nothing committed
		t.Fatal(err)
	}

	ms := messages(receiveUntil(t, a, func(evs []transport.Event) bool {
		for _, m := range messages(evs) {
			if m.Stream.Partition == 0 {
				return true
			}
		}
		return false
	}))
	if m := ms[len(ms)-1]; m.Seq != 0 {
		t.Fatalf("a's first message of partition 0 is offset %d, want 0: the message dropped by the rebalance was skipped as delivered (AlreadyDelivered %d)",
			m.Seq, a.Stats().AlreadyDelivered)
	}
}
