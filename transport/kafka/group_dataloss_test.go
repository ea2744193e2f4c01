package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestAckAfterDataLoss: offsets Receive returned before a broker lost
// them (a data-loss reset to offset 6 after offsets 0..9 were
// delivered) were processed by the application, so their Acks are
// taken, not refused: a pipe acknowledging in rounds gets no refusal
// for work it did. Such an Ack commits the reset point at most: the
// offsets above it now hold records the application was never given
// (or none: past the broker's new log end). An Ack of an offset never
// returned is still refused.
func TestAckAfterDataLoss(t *testing.T) {
	addr, g, stream := tenDelivered(t, time.Hour)
	ctx := context.Background()
	// The fetch that reports the loss, as the client returns it; no
	// Receive runs meanwhile.
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ResetTo: 6})
	if err := g.Ack(ctx, stream, 10); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("Ack of offset 10, never delivered: %v, want ErrNotDelivered", err)
	}
	if err := g.Ack(ctx, stream, 8); err != nil {
		t.Fatalf("Ack of offset 8, delivered before the loss: %v, want it taken", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 6 {
		t.Fatalf("committed %d, want 6: the reset point, past which no record was given since", c)
	}
}

// TestAckAcrossDataLoss: what an Ack commits after a data-loss reset,
// offsets 6..9 delivered before it. Those offsets name two records
// each, the one lost and the one the broker holds now, and an Ack in
// them cannot say which: it commits the reset point, so the new record
// is delivered again after a restart (at least once) rather than
// skipped. An Ack past them commits past it. A second loss widens the
// range.
func TestAckAcrossDataLoss(t *testing.T) {
	stream := transport.StreamID{Topic: "t"}
	for _, tc := range []struct {
		name      string
		delivered int64  // Receive returned new records up to here, after the loss
		second    int64  // a second loss's reset point, or 0
		ack       uint64 // then this Ack
		want      int64  // commits this (the partition's floor)
		wantErr   error
	}{
		{name: "old record above the reset", delivered: 6, ack: 9, want: 6},
		{name: "old record below the reset", delivered: 6, ack: 4, want: 5},
		{name: "new record delivered again, ambiguous", delivered: 9, ack: 7, want: 6},
		{name: "new record past the old ones", delivered: 12, ack: 11, want: 12},
		{name: "never delivered", delivered: 6, ack: 10, want: 0, wantErr: ErrNotDelivered},
		{name: "never delivered since", delivered: 12, ack: 12, want: 0, wantErr: ErrNotDelivered},
		{name: "second loss widens the range", delivered: 12, second: 11, ack: 10, want: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
			g.cl = offlineClient(t)
			g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
			st := g.parts[0]
			st.started, st.next, st.delivered = true, 10, 10
			lose(t, g, 10, 6)
			for off := int64(6); off < tc.delivered; off++ {
				g.queue = append(g.queue, queued{r: &kgo.Record{Topic: "t", Offset: off}, logStart: -1})
				if _, ok, err := g.step(context.Background()); !ok || err != nil {
					t.Fatalf("step at %d: %v %v", off, ok, err)
				}
			}
			if tc.second > 0 {
				lose(t, g, tc.delivered, tc.second)
			}
			err := g.Ack(context.Background(), stream, tc.ack)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Ack(%d): %v, want %v", tc.ack, err, tc.wantErr)
			}
			if st.floor != tc.want {
				t.Errorf("Ack(%d) commits %d, want %d", tc.ack, st.floor, tc.want)
			}
		})
	}
}

// lose has g take a fetch reporting that partition 0 of "t", consumed
// to to, was reset to resetTo.
func lose(t *testing.T, g *GroupSubscriber, to, resetTo int64) {
	t.Helper()
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "t", Partition: 0, ConsumedTo: to, ResetTo: resetTo})
}

// takeLoss has g take the fetch that reports loss, as the client
// returns it.
func takeLoss(t *testing.T, g *GroupSubscriber, loss *kgo.ErrDataLoss) {
	t.Helper()
	fetches := kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: loss.Topic, Partitions: []kgo.FetchPartition{{Partition: loss.Partition, Err: loss}}}}}}
	if err := g.take(fetches); !errors.As(err, &loss) {
		t.Fatalf("take: %v, want the data loss", err)
	}
}

// tenDelivered starts a logd whose topic "loss" (one partition) holds
// offsets 0..9, and a member of group "g" committing every interval
// that has received all ten; it returns logd's address, the member
// (closed when the test ends) and the partition's stream.
func tenDelivered(t *testing.T, interval time.Duration) (string, *GroupSubscriber, transport.StreamID) {
	t.Helper()
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "loss", 1)
	cl := newClient(t, addr)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "loss", Value: fmt.Appendf(nil, "%d", i)})
	}
	g, err := NewGroupSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "loss", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(interval)}, groupOpts...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return addr, g, messages(receiveUntil(t, g, untilMessages(10)))[0].Stream
}

// TestDataLossForgetsEpochs: the leader epochs noted for offsets a
// broker lost are forgotten: the records it holds there now have their
// own, which an acknowledgement of one commits with (the client orders
// marks by epoch first, and the broker checks a commit's epoch against
// its log).
func TestDataLossForgetsEpochs(t *testing.T) {
	st := &partition{started: true, next: 10, delivered: 10}
	st.noteEpoch(0, 1)
	st.noteEpoch(8, 2)
	st.lose(6)
	st.noteEpoch(6, 3)
	if e := st.epochOf(6); e != 3 {
		t.Errorf("epoch of offset 6, written after the loss in epoch 3: %d", e)
	}
}
