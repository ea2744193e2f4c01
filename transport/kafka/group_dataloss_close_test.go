package kafka

import (
	"context"
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
	addr, g, stream := tenDelivered(t, time.Hour)
	if err := g.Ack(context.Background(), stream, 9); err != nil {
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
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1})
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 6 {
		t.Fatalf("committed %d by a Close that began during the loss's rewind, want 6: the reset point", c)
	}
}
