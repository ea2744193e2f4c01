package multicast

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestFlowControlSlowSubscriber: a publisher at full speed and a
// subscriber that reads slowly (its socket buffer overflows while it
// sleeps), with a retransmit window of 64 datagrams. With flow control
// the publisher waits for it: every message arrives, no gap. Without,
// the publisher outpaces it and the gaps say so (GapOutpaced).
func TestFlowControlSlowSubscriber(t *testing.T) {
	for _, mode := range []reliable.FlowMode{reliable.FlowMin, reliable.FlowNone} {
		t.Run(mode.String(), func(t *testing.T) {
			const n = 20_000
			cfg := testConfig(t)
			cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU,
				Flow: reliable.FlowConfig{Mode: mode}}
			if mode != reliable.FlowNone {
				cfg.Sender.Flow.MinReceivers = 1 // the subscriber misses no start
			}
			scfg := cfg
			scfg.Queue, scfg.RecvBuffer = 2, 64<<10
			s := mustSub(t, scfg)
			p := mustPub(t, cfg)
			go publishN(t, p, 0, n, 64)
			a := readSlowly(t, s, n)
			ps, ss := p.Stats(), s.Stats()
			if mode == reliable.FlowNone {
				if len(a.gaps) == 0 {
					t.Fatal("no gap: the publisher did not outpace the slow subscriber, so the test shows nothing")
				}
				for _, g := range a.gaps {
					if g.Reason != transport.GapOutpaced {
						t.Fatalf("gap %v: want GapOutpaced", g)
					}
				}
				return
			}
			if len(a.gaps) != 0 {
				t.Fatalf("gaps with flow control: %v (publisher %+v)", a.gaps, ps.SenderStats)
			}
			if ps.FlowHeld == 0 || ss.StatusSent == 0 {
				t.Fatalf("flow control never held the publisher (held %d, STATUS sent %d)", ps.FlowHeld, ss.StatusSent)
			}
		})
	}
}

// readSlowly reads messages 0..n-1 (sequence numbers 1..n) from s, or
// the gaps that stand for them, sleeping 2 ms every 500 messages: a
// slow reader, whose socket buffer overflows while it sleeps.
func readSlowly(t *testing.T, s *Subscriber, n int) accountant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var a accountant
	for a.next < uint64(n)+1 {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("after sequence %d: %v; gaps %v", a.next-1, err, a.gaps)
		}
		a.add(t, &ev)
		if ev.Kind == transport.EventMessage && a.lastIndex%500 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	return a
}

// TestFlowFail: with FlowFail, a held Publish fails at once instead of
// waiting; with a context, a waiting Publish ends with the context.
func TestFlowFail(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	p := mustPub(t, cfg)
	if err := p.Publish(ctx, transport.Message{Payload: []byte("x")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no subscriber, waiting: %v, want the context's deadline", err)
	}
	cfg.FlowFail = true
	cfg.Group = testConfig(t).Group
	p = mustPub(t, cfg)
	if err := p.Publish(context.Background(), transport.Message{Payload: []byte("x")}); !errors.Is(err, reliable.ErrFlowControl) {
		t.Fatalf("no subscriber, FlowFail: %v, want ErrFlowControl", err)
	}
}
