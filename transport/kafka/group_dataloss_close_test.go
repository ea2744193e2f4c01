package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDataLossRewindBeforeCloseCommit: Close, from another goroutine,
// begins while take has taken a data loss (offset 9 acknowledged, the
// mark 10, reset to 6) but has not yet moved the client's mark back.
// Close's commit must wait for the rewind and write 6: committing 10
// would have the next owner skip the records the broker holds from 6
// on, which Receive never returned, and no commit follows Close's.
func TestDataLossRewindBeforeCloseCommit(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "loss", 1)
	cl := newClient(t, addr)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "loss", Value: fmt.Appendf(nil, "%d", i)})
	}
	ctx := context.Background()
	g, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "loss", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour)}, groupOpts...)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ms := messages(receiveUntil(t, g, untilMessages(10)))
	stream := ms[0].Stream
	if err := g.Ack(ctx, stream, 9); err != nil {
		t.Fatal(err)
	}
	closeBegun := make(chan struct{})
	g.closing = func() { close(closeBegun) }
	closed := make(chan error, 1)
	g.rewinding = func() {
		go func() { closed <- g.Close() }()
		<-closeBegun
		// Close's commit, unless it waits for the rewind, is made and
		// answered meanwhile.
		select {
		case err := <-closed:
			closed <- err
		case <-time.After(300 * time.Millisecond):
		}
	}
	loss := &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1}
	fetches := kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "loss", Partitions: []kgo.FetchPartition{{Partition: stream.Partition, Err: loss}}}}}}
	if err := g.take(fetches); !errors.As(err, &loss) {
		t.Fatalf("take: %v, want the data loss", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 6 {
		t.Fatalf("committed %d by a Close that began during the loss's rewind, want 6: the reset point", c)
	}
}
