package kafka

import (
	"context"
	"testing"
	"time"
)

// TestRemarkCommittedByCloseDuringRevocation: an Ack's mark kept while
// the client did not take marks of its partition (partition.remark: a
// partition given back to the member, not yet fetched again) returned
// nil, so Close's commit must carry it — also when a revocation of the
// partition runs during Close (it leaves its commit to Close and waits
// for it, see awaitCloseCommit): the revocation drops the partition
// before Close's commit reads the marks. The member and its commits are
// real; the partition's state after the rebalance is set by the test.
func TestRemarkCommittedByCloseDuringRevocation(t *testing.T) {
	addr, g, stream := tenDelivered(t, time.Hour)
	ctx := context.Background()
	g.mu.Lock()
	g.parts[stream.Partition].fetching = true
	g.mu.Unlock()
	if err := g.Ack(ctx, stream, 9); err != nil {
		t.Fatal(err)
	}
	revoked := make(chan struct{})
	g.closing = func() {
		go g.revoked(ctx, g.cl, map[string][]int32{"loss": {stream.Partition}})
		deadline := time.Now().Add(testDeadline)
		for time.Now().Before(deadline) {
			g.mu.Lock()
			owned := g.parts[stream.Partition].owned
			g.mu.Unlock()
			if !owned {
				close(revoked)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	wait(t, revoked, "the revocation to drop the partition")
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 10 {
		t.Fatalf("the Ack of offset 9 returned nil; Close, during a revocation of its partition, committed %d, not 10", c)
	}
}
