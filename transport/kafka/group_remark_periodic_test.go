package kafka

import (
	"context"
	"testing"
	"time"
)

// TestRemarkCommittedPeriodically: an Ack's mark kept while the client
// takes no marks of its partition (partition.remark: a partition given
// back to the member, and no record of it fetched since) is committed
// at the periodic cadence, as Ack promises, not only by a revocation or
// Close: no new record may come for hours, and a crash would deliver
// again everything acknowledged since. The member and its commits are
// real; the partition's state after the rebalance is set by the test.
func TestRemarkCommittedPeriodically(t *testing.T) {
	const interval = 100 * time.Millisecond
	addr, g, stream := tenDelivered(t, interval)
	g.mu.Lock()
	g.parts[stream.Partition].fetching = true
	g.mu.Unlock()
	if err := g.Ack(context.Background(), stream, 9); err != nil {
		t.Fatal(err)
	}
	// Thirty periods, no new record, neither revocation nor Close.
	deadline := time.Now().Add(30 * interval)
	c := committed(t, addr, "g", "loss", stream.Partition)
	for c != 10 && time.Now().Before(deadline) {
		time.Sleep(interval / 2)
		c = committed(t, addr, "g", "loss", stream.Partition)
	}
	if c != 10 {
		t.Fatalf("the Ack of offset 9, kept while its partition fetched nothing, is not committed after %v (periodic commits every %v): the group's commit is %d, not 10", 30*interval, interval, c)
	}
}
