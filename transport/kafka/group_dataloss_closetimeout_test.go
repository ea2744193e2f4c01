package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDataLossCloseTimesOutBehindCommitInFlight: as
// TestDataLossRewindAfterCommitInFlight, where the commit in flight with
// the old mark (10) is answered only after Close gave up waiting for
// the commit of the reset point (6) behind it: the old mark is the
// group's commit then, and the next owner skips the records the broker
// holds from 6 on. Close cannot wait for it (it is bounded), but it
// must say so (ErrResetNotCommitted), not return nil nor an error that
// says the acknowledgements are delivered again.
func TestDataLossCloseTimesOutBehindCommitInFlight(t *testing.T) {
	addr, g, stream, inFlight, release := heldCommitLeave(t, 1, time.Hour, true)
	ctx := context.Background()
	if err := g.Ack(ctx, stream, 9); err != nil {
		t.Fatal(err)
	}
	periodic(g)
	wait(t, inFlight, "the commit of 10")
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1})
	err := g.Close()
	t.Logf("Close: %v", err)
	release()
	time.Sleep(time.Second) // for the held commit, then the leave, to be answered
	c := committed(t, addr, "g", "loss", stream.Partition)
	t.Logf("committed %d", c)
	if c != 6 && !errors.Is(err, ErrResetNotCommitted) {
		t.Fatalf("committed %d after Close, not the reset point 6, and Close returned %v, not ErrResetNotCommitted", c, err)
	}
}
