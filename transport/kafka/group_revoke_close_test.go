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

	"github.com/brokerless/brokerless/transport"
)

// TestCloseDuringRevokeCommit: a Close called while the commit before a
// revocation waits for a broker that does not answer it returns, as
// Close does when the broker does not answer its own commit, instead
// of waiting for that commit, which the client does not bound (here a
// minute per attempt).
func TestCloseDuringRevokeCommit(t *testing.T) {
	_, cfg, inFlight, _ := heldRevokeCommit(t)
	a, _ := ackThenRevoke(t, cfg, cfg, inFlight)
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
	addr, cfg, inFlight, release := heldRevokeCommit(t)
	// The client issues Close's commit once the revocation's returned.
	logs := &countHandler{match: "issuing commit", n: 2, seen: make(chan struct{})}
	acfg := cfg
	acfg.Logger = slog.New(logs)
	a, m := ackThenRevoke(t, acfg, cfg, inFlight)
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	wait(t, logs.seen, "Close's commit")
	release()
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
	if got := committed(t, addr, "g", "slow", m.Stream.Partition); got != int64(m.Seq)+1 {
		t.Errorf("committed %d, want %d", got, m.Seq+1)
	}
}

// heldRevokeCommit starts a kfake cluster holding topic "slow", two
// partitions of one record each, whose first OffsetCommit (the
// revocation's: a group of cfg commits nothing periodically) gets no
// answer until release is called or the test ends. It returns the
// cluster's address, a group's Config on it, and a channel closed once
// that commit is in flight.
func heldRevokeCommit(t *testing.T) (addr string, cfg Config, inFlight chan struct{}, release func()) {
	t.Helper()
	var c *kfake.Cluster
	c, addr = groupCluster(t, 2, "slow")
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		produce(t, cl, &kgo.Record{Topic: "slow", Partition: p, Value: []byte("x")})
	}
	inFlight, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	var commits atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if commits.Add(1) == 1 {
			close(inFlight)
			c.SleepControl(func() { <-held })
		}
		return nil, nil, false
	})
	opts := append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.Balancers(kgo.RangeBalancer()),
		kgo.RequestTimeoutOverhead(time.Minute), kgo.RetryTimeout(time.Minute)}, groupOpts...)
	return addr, Config{Brokers: []string{addr}, Topic: "slow", Group: "g", Options: opts}, inFlight, release
}

// ackThenRevoke starts a member of acfg, has it receive and acknowledge
// a message, then starts a second member of cfg, whose joining revokes
// a partition of the first: it returns the first member and its message
// once the revocation's commit is in flight.
func ackThenRevoke(t *testing.T, acfg, cfg Config, inFlight <-chan struct{}) (*GroupSubscriber, transport.Message) {
	t.Helper()
	ctx := context.Background()
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
	t.Cleanup(func() { b.Close() })
	wait(t, inFlight, "the revocation's commit")
	return a, ms[0]
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
