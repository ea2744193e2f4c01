package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStaleDataLossReportedNotRewound: franz-go keeps the data-loss
// reports of a consumer session that ended (a rebalance) for the next
// poll (see its consumer.go, "We deliberately leave
// c.fakeReadyForDraining"). One that arrives once the partition came
// back, from an offset below where the new assignment started (the
// group's commit, 14 here), predates that assignment: it does not move
// the group's commit back (its owners advanced it since). But the loss
// is real — the broker did lose what it reports — and the member that
// owned the partition meanwhile may not have seen it (on logd, whose
// leader epochs are unknown, a fetch from an offset the broker now
// holds other records at finds nothing wrong): it is the only report
// of that loss, and is returned, not dropped into a log. The rebalance
// is played by calling the member's callbacks.
func TestStaleDataLossReportedNotRewound(t *testing.T) {
	addr, g, stream := tenDelivered(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cl := newClient(t, addr)
	for i := 10; i < 14; i++ {
		produce(t, cl, &kgo.Record{Topic: "loss", Value: fmt.Appendf(nil, "%d", i)})
	}
	receiveUntil(t, g, untilMessages(4))
	if err := g.Ack(ctx, stream, 13); err != nil {
		t.Fatal(err)
	}
	if err := g.commitMarked(ctx); err != nil {
		t.Fatal(err)
	}
	ps := map[string][]int32{"loss": {stream.Partition}}
	g.lost(ctx, g.cl, ps)
	giveBack(t, g, stream.Partition, 14)
	// The old session's report: it had fetched to 10 when the broker
	// lost offsets 6 on.
	loss, fetches := staleLoss(stream.Partition)
	if err := g.take(fetches); !errors.As(err, &loss) {
		t.Errorf("a loss of the broker reported to the session before the partition came back, from below where it started again (14), was not returned: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 14 {
		t.Fatalf("a loss reported before the partition came back moved the group's commit from 14 to %d", c)
	}
}

// TestDataLossAfterGiveBackTaken: a loss of the current assignment,
// from where it started (the group's commit, 10: the broker's log ends
// below it), is taken, and one of a partition no longer owned is
// returned too: a loss is never only logged (see
// TestStaleDataLossReportedNotRewound).
func TestDataLossAfterGiveBackTaken(t *testing.T) {
	for _, tc := range []struct {
		name string
		back bool // given back after the loss of the session
	}{
		{name: "given back", back: true},
		{name: "not owned", back: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, g, stream := tenDelivered(t, time.Hour)
			g.lost(context.Background(), g.cl, map[string][]int32{"loss": {stream.Partition}})
			if tc.back {
				giveBack(t, g, stream.Partition, 10)
			}
			loss, fetches := staleLoss(stream.Partition)
			if err := g.take(fetches); !errors.As(err, &loss) {
				t.Fatalf("take: %v; want the loss reported", err)
			}
		})
	}
}

// giveBack gives partition p of topic loss back to g, as a rebalance
// does, with the group's commit at committed (the offset fetch the
// client makes for it, answered).
func giveBack(t *testing.T, g *GroupSubscriber, p int32, committed int64) {
	t.Helper()
	ctx := context.Background()
	g.assigned(ctx, g.cl, map[string][]int32{"loss": {p}})
	resp := kmsg.NewPtrOffsetFetchResponse()
	rt := kmsg.NewOffsetFetchResponseTopic()
	rt.Topic = "loss"
	rp := kmsg.NewOffsetFetchResponseTopicPartition()
	rp.Partition, rp.Offset = p, committed
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	if err := g.offsetsFetched(ctx, g.cl, resp); err != nil {
		t.Fatal(err)
	}
}

// staleLoss is a data-loss report of partition p of topic loss, from an
// earlier session: it had fetched to 10 when the broker lost offsets 6
// on; and a poll's fetches carrying it.
func staleLoss(p int32) (*kgo.ErrDataLoss, kgo.Fetches) {
	loss := &kgo.ErrDataLoss{Topic: "loss", Partition: p, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1}
	return loss, kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "loss", Partitions: []kgo.FetchPartition{{Partition: p, Err: loss}}}}}}
}
