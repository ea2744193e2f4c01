package kafka

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCloseDuringRevokeCommit: a Close called while the commit before a
// revocation waits for a broker that does not answer it returns, as
// Close does when the broker does not answer its own commit, instead
// of waiting for that commit, which the client does not bound (here a
// minute per attempt).
func TestCloseDuringRevokeCommit(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "slow"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		produce(t, cl, &kgo.Record{Topic: "slow", Partition: p, Value: []byte("x")})
	}
	// The first commit, the revocation's (nothing is committed
	// periodically), gets no answer until the test ends.
	inFlight, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	var commits atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if commits.Add(1) == 1 {
			close(inFlight)
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	ctx := context.Background()
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.Balancers(kgo.RangeBalancer()),
		kgo.RequestTimeoutOverhead(time.Minute), kgo.RetryTimeout(time.Minute)}, groupOpts...)
	cfg := Config{Brokers: []string{addr}, Topic: "slow", Group: "g", Options: opts}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(receiveUntil(t, a, untilMessages(1)))
	if err := a.Ack(ctx, ms[0].Stream, ms[0].Seq); err != nil {
		t.Fatal(err)
	}
	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wait(t, inFlight, "the revocation's commit")
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close: %v", err)
	case <-time.After(testDeadline):
		t.Fatalf("Close still running after %v, waiting for the revocation's commit", testDeadline)
	}
}
