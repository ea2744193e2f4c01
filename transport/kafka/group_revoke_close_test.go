package kafka

import (
	"context"
	"log/slog"
	"strings"
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

// TestCloseEndsRevokeCommitUncounted: the commit before a revocation
// that Close ends is no failure — Close commits what it carried, and
// counts its own failure if it has one — so it is neither counted nor
// logged as one. Here the broker answers it once Close's own commit is
// on its way: both succeed, and the acknowledgement is committed.
func TestCloseEndsRevokeCommitUncounted(t *testing.T) {
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
	// The first commit, the revocation's, is answered once released.
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
	// The client issues Close's commit once the revocation's returned.
	logs := &countHandler{match: "issuing commit", n: 2, seen: make(chan struct{})}
	ctx := context.Background()
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.Balancers(kgo.RangeBalancer()),
		kgo.RequestTimeoutOverhead(time.Minute), kgo.RetryTimeout(time.Minute)}, groupOpts...)
	cfg := Config{Brokers: []string{addr}, Topic: "slow", Group: "g", Options: opts}
	acfg := cfg
	acfg.Logger = slog.New(logs)
	a, err := NewGroupSubscriber(ctx, acfg)
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
	wait(t, logs.seen, "Close's commit")
	releaseOnce.Do(func() { close(release) })
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(testDeadline):
		t.Fatalf("Close still running after %v", testDeadline)
	}
	if n := a.Stats().CommitErrors; n != 0 {
		t.Errorf("CommitErrors %d after Close ended the revocation's commit and committed itself, want 0", n)
	}
	if logs.has("commit before a rebalance failed") {
		t.Error("the commit Close ended was logged as failed")
	}
	if got := committed(t, addr, "g", "slow", ms[0].Stream.Partition); got != int64(ms[0].Seq)+1 {
		t.Errorf("committed %d, want %d", got, ms[0].Seq+1)
	}
}

// countHandler is a slog handler, of every level, that keeps the
// messages and closes seen at the nth one containing match.
type countHandler struct {
	match string
	n     int
	seen  chan struct{}

	mu   sync.Mutex
	msgs []string
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	if strings.Contains(r.Message, h.match) {
		if h.n--; h.n == 0 {
			close(h.seen)
		}
	}
	return nil
}

// has reports whether a message kept contains s.
func (h *countHandler) has(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }
