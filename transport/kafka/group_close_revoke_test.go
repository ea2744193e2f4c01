package kafka

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRevocationDuringCloseCommitted: a revocation that runs once Close
// has begun, before Close's commit has read what was acknowledged,
// leaves the commit to Close — and must not return before Close has
// read it: the client forgets the marks of the partitions revoked once
// the revocation returns, and Close would then commit nothing, the
// acknowledgement delivered again to the next owner. Close is held
// after it began until the revocation that a second member's joining
// causes has either returned (the client then joins the group again)
// or said it waits for Close's commit.
func TestRevocationDuringCloseCommitted(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "closing", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		produce(t, cl, &kgo.Record{Topic: "closing", Partition: p, Value: []byte("x")})
	}
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "closing", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour), kgo.Balancers(kgo.RangeBalancer())}, groupOpts...)}
	logs := &armedHandler{match: []string{"joining group", "waits for Close's commit"}, seen: make(chan struct{})}
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
	logs.arm()
	began := make(chan struct{})
	a.closing = func() {
		close(began)
		select {
		case <-logs.seen:
		case <-time.After(testDeadline):
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	wait(t, began, "Close to begin")
	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(2 * testDeadline):
		t.Fatal("Close still running")
	}
	if got := committed(t, addr, "g", "closing", ms[0].Stream.Partition); got != int64(ms[0].Seq)+1 {
		t.Errorf("committed %d, want %d: the acknowledgement made before Close", got, ms[0].Seq+1)
	}
}

// TestRevokeCommitEndedByCloseCommitted: a revocation whose commit
// Close ends (the broker holds it unanswered) must not return before
// Close's commit has read what was acknowledged, for the same reason.
// Close is held after it began until the revocation has returned or
// said it waits; the broker answers Close's commit once issued.
func TestRevokeCommitEndedByCloseCommitted(t *testing.T) {
	addr, cfg, inFlight, release := heldRevokeCommit(t)
	logs := &armedHandler{match: []string{"joining group", "waits for Close's commit"}, seen: make(chan struct{})}
	issued := &countHandler{match: "issuing commit", n: 2, seen: make(chan struct{})}
	acfg := cfg
	acfg.Logger = slog.New(teeHandler{logs, issued})
	a, m := ackThenRevoke(t, acfg, cfg, inFlight)
	logs.arm()
	a.closing = func() {
		select {
		case <-logs.seen:
		case <-time.After(testDeadline):
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	select {
	case <-issued.seen:
		release()
	case err := <-closed:
		t.Fatalf("Close returned %v without a commit of its own", err)
	case <-time.After(testDeadline):
		t.Fatal("no commit by Close")
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(testDeadline):
		t.Fatal("Close still running")
	}
	if got := committed(t, addr, "g", "slow", m.Stream.Partition); got != int64(m.Seq)+1 {
		t.Errorf("committed %d, want %d", got, m.Seq+1)
	}
}

// teeHandler hands each record to both handlers.
type teeHandler [2]slog.Handler

func (h teeHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	_ = h[0].Handle(ctx, r)
	return h[1].Handle(ctx, r)
}

func (h teeHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h teeHandler) WithGroup(string) slog.Handler      { return h }

// armedHandler is a slog handler, of every level, that closes seen at
// the first message containing one of match once armed.
type armedHandler struct {
	match []string
	seen  chan struct{}

	mu          sync.Mutex
	armed, done bool
}

func (h *armedHandler) arm() {
	h.mu.Lock()
	h.armed = true
	h.mu.Unlock()
}

func (h *armedHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *armedHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.armed || h.done {
		return nil
	}
	for _, m := range h.match {
		if strings.Contains(r.Message, m) {
			h.done = true
			close(h.seen)
			break
		}
	}
	return nil
}

func (h *armedHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *armedHandler) WithGroup(string) slog.Handler      { return h }
