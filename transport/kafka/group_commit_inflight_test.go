package kafka

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// TestDataLossRewindAfterCommitInFlight: offset 9 acknowledged, a
// commit of its mark (10) in flight (here held by the broker), then a
// data loss resets the partition to 6. The client issues commits one
// after another, so the held commit lands first; the reset point must
// be committed after it at once — not at the next periodic commit
// (here an hour away) or at Close: until then the group's commit, 10,
// has a member that stops (a crash, a lost session) skip the records
// the broker holds from 6 on, which Receive never returned.
func TestDataLossRewindAfterCommitInFlight(t *testing.T) {
	addr, g, stream, inFlight, release := heldCommit(t, 1, time.Hour)
	if err := g.Ack(context.Background(), stream, 9); err != nil {
		t.Fatal(err)
	}
	periodic(g)
	wait(t, inFlight, "the commit of 10")
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1})
	release()
	awaitCommitted(t, addr, "loss", stream.Partition, 6)
}

// TestDataLossCloseAfterCommitInFlight: as
// TestDataLossRewindAfterCommitInFlight, where the group had committed
// the reset point, 6, before the commit of 10 left, and the member
// closes while that commit is in flight. The client, which counts 6
// as committed, has nothing to commit for Close after the rewind to
// 6: Close's commit must still follow the one in flight with 6.
func TestDataLossCloseAfterCommitInFlight(t *testing.T) {
	addr, g, stream, inFlight, release := heldCommit(t, 2, time.Hour)
	ctx := context.Background()
	// The marks carry no leader epoch, as on logd, whose records have
	// none: the client's mark after the rewind (epoch -1) is then the
	// commit it counts as made.
	g.mu.Lock()
	g.parts[stream.Partition].epochs = nil
	g.mu.Unlock()
	if err := g.Ack(ctx, stream, 5); err != nil {
		t.Fatal(err)
	}
	if err := g.cl.CommitMarkedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Ack(ctx, stream, 9); err != nil {
		t.Fatal(err)
	}
	periodic(g)
	wait(t, inFlight, "the commit of 10")
	takeLoss(t, g, &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1})
	// The held commit is answered once Close's has returned or, if
	// that waits for it, after a moment.
	g.closing = func() {
		go func() {
			select {
			case <-g.closeCommitted:
			case <-time.After(300 * time.Millisecond):
			}
			release()
		}()
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // for the held commit, if Close did not wait for it
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 6 {
		t.Fatalf("committed %d after Close, want 6", c)
	}
}

// TestCloseBehindStuckPeriodicCommit: a periodic commit in flight that
// the broker does not answer (here for a minute) does not hold Close's
// commit past Close's deadline: the client issues Close's commit only
// once the one before it is answered, and that wait has no deadline.
// Close returns within its bounds, with the commit's error.
func TestCloseBehindStuckPeriodicCommit(t *testing.T) {
	_, g, stream, inFlight, _ := heldCommit(t, 1, 100*time.Millisecond)
	if err := g.Ack(context.Background(), stream, 9); err != nil {
		t.Fatal(err)
	}
	wait(t, inFlight, "the periodic commit")
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- g.Close() }()
	// Close's commit and its leave are bounded by closeFlush each.
	limit := 3 * closeFlush
	select {
	case err := <-closed:
		t.Logf("Close after %v: %v", time.Since(start), err)
		if err == nil {
			t.Error("Close: nil, its commit not made")
		}
	case <-time.After(limit):
		t.Fatalf("Close still running after %v, behind the periodic commit", limit)
	}
}

// periodic has g's client commit its marks without waiting, as the
// periodic commit does (kgo orders it with the commits that follow).
func periodic(g *GroupSubscriber) {
	g.cl.CommitOffsets(context.Background(), g.cl.MarkedOffsets(), nil)
}

// heldCommit starts a kfake cluster whose topic "loss" (one partition)
// holds offsets 0..9, and a member of group "g", committing every interval,
// that has received all ten. The cluster does not answer its nth
// OffsetCommit until release is called or the test ends; inFlight is
// closed once that commit arrived. It returns the cluster's address,
// the member (closed when the test ends) and the partition's stream.
func heldCommit(t *testing.T, n int32, interval time.Duration) (addr string, g *GroupSubscriber, stream transport.StreamID, inFlight chan struct{}, release func()) {
	t.Helper()
	return heldCommitLeave(t, n, interval, false)
}

// heldCommitLeave is heldCommit where, with holdLeave, the cluster also
// holds a LeaveGroup until the held commit is released, and answers it
// a moment after: as a Kafka broker does, which answers the requests
// of a connection in order, and the client sends both on one.
func heldCommitLeave(t *testing.T, n int32, interval time.Duration, holdLeave bool) (addr string, g *GroupSubscriber, stream transport.StreamID, inFlight chan struct{}, release func()) {
	t.Helper()
	var c *kfake.Cluster
	c, addr = groupCluster(t, 1, "loss")
	cl := newClient(t, addr)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "loss", Value: fmt.Appendf(nil, "%d", i)})
	}
	inFlight, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	var commits atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if commits.Add(1) == n {
			close(inFlight)
			c.SleepControl(func() { <-held })
		}
		return nil, nil, false
	})
	if holdLeave {
		c.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			c.SleepControl(func() { <-held; time.Sleep(200 * time.Millisecond) })
			return nil, nil, false
		})
	}
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(interval), kgo.RequestTimeoutOverhead(time.Minute), kgo.RetryTimeout(time.Minute)}, groupOpts...)
	if holdLeave {
		// The member stays in the group while the leave is held (its
		// heartbeats end as it leaves): a Kafka broker checks a
		// commit's member as the commit arrives, not when it is
		// answered, which the cluster here does.
		opts = append(opts, kgo.SessionTimeout(time.Minute))
	}
	var err error
	g, err = NewGroupSubscriber(context.Background(), Config{Brokers: []string{addr}, Topic: "loss", Group: "g", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(); g.Close() })
	return addr, g, messages(receiveUntil(t, g, untilMessages(10)))[0].Stream, inFlight, release
}
