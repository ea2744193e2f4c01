package kafka

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// TestConformance runs the suite twice against logd in a child process
// (fsync always: acknowledged is durable), which RestartServer kills
// with SIGKILL: without a group (Replay, Deduplicated, Durable) and as a
// group member (AtLeastOnce, Durable).
func TestConformance(t *testing.T) {
	for _, tc := range []struct{ name, group string }{{"plain", ""}, {"group", "conformance"}} {
		t.Run(tc.name, func(t *testing.T) {
			transporttest.Run(t, transporttest.Harness{
				NewPair: func(t *testing.T, f transporttest.Faults) (transporttest.Pair, error) {
					if !f.IsZero() {
						return transporttest.Pair{}, transporttest.ErrFaultsUnsupported
					}
					p, _, err := newPair(t, tc.group)
					return p, err
				},
				MaxPayload:     512 << 10,
				ContiguousSeq:  true,
				TimeResolution: time.Millisecond,
			})
		})
	}
}

// newPair starts a logd child (a fresh one per pair), creates the
// suite's topic, and opens a publisher and a subscriber of it, the
// subscriber in group when not empty.
func newPair(t *testing.T, group string) (transporttest.Pair, *childLogd, error) {
	srv := startChildLogd(t)
	createTopic(t, srv.addr, transporttest.Topic, 1)
	cfg := Config{Brokers: []string{srv.addr}, Topic: transporttest.Topic, Group: group}
	if group != "" {
		cfg.Options = groupOpts
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	sub, err := openSubscriber(ctx, cfg)
	if err != nil {
		return transporttest.Pair{}, nil, err
	}
	pub, err := NewPublisher(ctx, cfg)
	if err != nil {
		sub.Close()
		return transporttest.Pair{}, nil, err
	}
	p := transporttest.Pair{
		Pub:           pub,
		Sub:           sub,
		RestartServer: srv.restart,
		NewSubscriber: func(from uint64) (transport.Subscriber, error) {
			c := cfg
			c.Group, c.Options, c.From = "", nil, AtOffset(int64(from))
			return openSubscriber(context.Background(), c)
		},
	}
	if group != "" {
		p.NewGroupMember = func() (transport.Subscriber, error) { return openSubscriber(context.Background(), cfg) }
	}
	return p, srv, nil
}

// openSubscriber opens what the URL endpoint would for cfg.
func openSubscriber(ctx context.Context, cfg Config) (transport.Subscriber, error) {
	return endpoint{cfg}.Subscriber(ctx)
}

// TestHarnessHooks checks the hooks the suite's Durable, Replay and
// AtLeastOnce checks use: RestartServer kills logd with SIGKILL and
// starts another process over the same data, where every acknowledged
// message still is, and the pair's publisher and subscriber go on;
// NewSubscriber replays from an offset; NewGroupMember resumes after
// what Sub acknowledged.
func TestHarnessHooks(t *testing.T) {
	ctx := context.Background()
	t.Run("RestartServer and NewSubscriber", func(t *testing.T) {
		p, srv, err := newPair(t, "")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Pub.Close()
		defer p.Sub.Close()
		const n = 100
		landed := make(chan transport.Receipt, n)
		for i := range n {
			err := p.Pub.(transport.ReceiptPublisher).PublishReceipt(ctx, transport.Message{Payload: fmt.Appendf(nil, "%d", i)},
				func(r transport.Receipt, err error) {
					if err != nil {
						t.Error(err)
					}
					landed <- r
				})
			if err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			<-landed
		}
		old := srv.cmd
		if err := p.RestartServer(); err != nil {
			t.Fatal(err)
		}
		if ws, ok := waitStatus(old); !ok || ws.Signal() != syscall.SIGKILL || srv.cmd.Process.Pid == old.Process.Pid {
			t.Fatalf("old logd ended with %v; new pid %d, old %d", old.ProcessState, srv.cmd.Process.Pid, old.Process.Pid)
		}
		if err := p.Pub.Publish(ctx, transport.Message{Payload: []byte("after")}); err != nil {
			t.Fatal(err)
		}
		if err := p.Pub.Flush(ctx); err != nil {
			t.Fatalf("Flush after the restart: %v", err)
		}
		if ms := messages(receiveUntil(t, p.Sub, untilMessages(n+1))); string(ms[n].Payload) != "after" {
			t.Fatalf("the pair's subscriber got %q last", ms[n].Payload)
		}

		replay, err := p.NewSubscriber(40)
		if err != nil {
			t.Fatal(err)
		}
		defer replay.Close()
		evs := receiveUntil(t, replay, untilMessages(n-40))
		if evs[0].Kind != transport.EventStreamStart || evs[0].Start.FirstSeq != 40 {
			t.Fatalf("replay from 40 began with %s", describe(evs[:1]))
		}
		for i, m := range messages(evs) {
			if m.Seq != uint64(40+i) || string(m.Payload) != fmt.Sprint(40+i) {
				t.Fatalf("replayed %d: offset %d %q", i, m.Seq, m.Payload)
			}
		}
	})
	t.Run("a group member across RestartServer", func(t *testing.T) {
		p, _, err := newPair(t, "restarts")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Pub.Close()
		defer p.Sub.Close()
		publish := func(from, to int) {
			for i := from; i < to; i++ {
				if err := p.Pub.Publish(ctx, transport.Message{Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Pub.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		publish(0, 10)
		receiveUntil(t, p.Sub, untilMessages(10))
		if err := p.RestartServer(); err != nil {
			t.Fatal(err)
		}
		publish(10, 20)
		// Receive must not fail while the member joins the restarted
		// coordinator again.
		ms := messages(receiveUntil(t, p.Sub, untilMessages(10)))
		if ms[0].Seq != 10 || ms[9].Seq != 19 {
			t.Fatalf("after the restart: offsets %d..%d, want 10..19", ms[0].Seq, ms[9].Seq)
		}
		t.Logf("group sessions lost and joined again: %d", p.Sub.(*GroupSubscriber).Stats().Rejoins)
	})
	t.Run("NewGroupMember", func(t *testing.T) {
		p, _, err := newPair(t, "members")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Pub.Close()
		for i := range 10 {
			if err := p.Pub.Publish(ctx, transport.Message{Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		ms := messages(receiveUntil(t, p.Sub, untilMessages(10)))
		if err := p.Sub.(transport.Acknowledger).Ack(ctx, ms[4].Stream, ms[4].Seq); err != nil {
			t.Fatal(err)
		}
		if err := p.Sub.Close(); err != nil {
			t.Fatal(err)
		}
		member, err := p.NewGroupMember()
		if err != nil {
			t.Fatal(err)
		}
		defer member.Close()
		if m := messages(receiveUntil(t, member, untilMessages(1)))[0]; m.Seq != 5 {
			t.Fatalf("the next member began at offset %d, want 5", m.Seq)
		}
	})
}

// waitStatus is how cmd ended, if it did.
func waitStatus(cmd *exec.Cmd) (syscall.WaitStatus, bool) {
	if cmd.ProcessState == nil {
		return 0, false
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, ok
}
