package kafka

import (
	"context"
	"errors"

	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRevokeDuringAutocommit: a rebalance that revokes partitions while
// a periodic commit is on its way, which then fails (as one does with
// REBALANCE_IN_PROGRESS), goes through. The commit before the
// revocation waits for the periodic one, and the client calls the
// periodic one's callback (autoCommitted) before that wait ends: a
// callback that waited for what the revocation holds would stop the
// member for good — its Receive, Stats, Ack and Close, and the group's
// rebalance with them. The failure is counted.
func TestRevokeDuringAutocommit(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "revoke", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Two records a partition: the one b is given has a record past
	// a's acknowledgement, whichever it is.
	for p := range int32(2) {
		produce(t, cl, &kgo.Record{Topic: "revoke", Partition: p, Value: []byte("x")}, &kgo.Record{Topic: "revoke", Partition: p, Value: []byte("y")})
	}
	// The first commit, the periodic one after the Ack below, waits in
	// the client until released, on its way as a slow broker would
	// keep it, and then fails.
	inFlight, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	var commits atomic.Int32
	hold := kgo.PreCommitFnContext(context.Background(), func(*kmsg.OffsetCommitRequest) error {
		if commits.Add(1) > 1 {
			return nil
		}
		close(inFlight)
		<-release
		return errors.New("the test fails this commit")
	})
	// The revocation's commit is waiting for the periodic one once the
	// client logs so after it announced the revocation.
	logs := &signalHandler{after: "revoking prior assigned partitions", then: "waiting for prior commit", seen: make(chan struct{})}
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "revoke", Group: "g", Logger: slog.New(logs),
		Options: append([]kgo.Opt{kgo.WithContext(hold), kgo.AutoCommitInterval(time.Second), kgo.Balancers(kgo.RangeBalancer())}, groupOpts...)}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(receiveUntil(t, a, untilMessages(1)))
	if err := a.Ack(ctx, ms[0].Stream, ms[0].Seq); err != nil {
		t.Fatal(err)
	}
	wait(t, inFlight, "the periodic commit")
	b, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "revoke", Group: "g", Options: cfg.Options})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wait(t, logs.seen, "the revocation's commit")
	releaseOnce.Do(func() { close(release) })

	// Stats does not wait for the revocation: the failure is counted
	// once the client called the periodic commit's callback.
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for a.Stats().CommitErrors == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	select {
	case <-counted:
	case <-time.After(testDeadline):
		t.Fatal("the failed periodic commit was not counted, or the member is stuck: Stats still waiting after the revocation")
	}
	receiveUntil(t, b, untilMessages(1)) // the rebalance went through
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// wait waits for ch to be closed, failing the test after testDeadline.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testDeadline):
		t.Fatalf("%s: not seen in %v", what, testDeadline)
	}
}

// signalHandler is a slog handler, of every level, that closes seen at
// the first message containing then that follows one containing after.
type signalHandler struct {
	after, then string
	seen        chan struct{}

	mu      sync.Mutex
	started bool
	done    bool
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.done:
	case strings.Contains(r.Message, h.after):
		h.started = true
	case h.started && strings.Contains(r.Message, h.then):
		h.done = true
		close(h.seen)
	}
	return nil
}

func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalHandler) WithGroup(string) slog.Handler      { return h }
