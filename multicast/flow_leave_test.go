package multicast

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestCloseLeavesFlowControl: a FlowMin publisher, a fast subscriber
// and a slow one (it takes a message every 20 ms, on its own goroutine,
// so Close may find it reading for itself). The slow one closes: its
// leaving STATUS makes the publisher stop waiting for it at once
// (ReceiversLeft), where before it held the feed for ReceiverTimeout,
// here an hour: the fast subscriber gets everything, and nobody timed
// out.
func TestCloseLeavesFlowControl(t *testing.T) {
	const n = 20_000
	cfg := testConfig(t)
	cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU,
		Flow: reliable.FlowConfig{Mode: reliable.FlowMin, ReceiverTimeout: time.Hour}}
	fast := mustSub(t, cfg)
	scfg := cfg
	scfg.Queue, scfg.RecvBuffer = 2, 64<<10
	slow := mustSub(t, scfg)
	p := mustPub(t, cfg)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer p.Close() // a held Publish ends, should the test fail
	// Both subscribers join flow control before the feed goes fast, so
	// that neither is outpaced before it is waited for.
	sent := 0
	for p.Stats().FlowReceivers < 2 {
		if ctx.Err() != nil || sent == n {
			t.Fatalf("the subscribers never both joined flow control: %+v", p.Stats().SenderStats)
		}
		if err := p.Publish(ctx, transport.Message{Payload: indexed(sent, 64)}); err != nil {
			t.Fatal(err)
		}
		sent++
		time.Sleep(time.Millisecond)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		publishN(t, p, sent, n-sent, 64)
	}()
	go func() {
		defer wg.Done()
		for {
			if _, err := slow.Receive(ctx); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	got := 0
	receive := func(want int) {
		for got < want {
			ev, err := fast.Receive(ctx)
			if err != nil {
				t.Fatalf("after %d messages: %v\npublisher %+v", got, err, p.Stats().SenderStats)
			}
			switch ev.Kind {
			case transport.EventMessage:
				got++
			case transport.EventGap:
				t.Fatalf("gap %v", ev.Gap)
			}
		}
	}
	receive(sent + 100)
	if st := p.Stats(); st.FlowReceivers != 2 || st.FlowTimeouts != 0 || st.FlowBehind != 0 {
		t.Fatalf("the slow subscriber is not waited for: %+v", st.SenderStats)
	}
	if err := slow.Close(); err != nil {
		t.Fatal(err)
	}
	receive(n)
	if st := p.Stats(); st.ReceiversLeft != 1 || st.FlowTimeouts != 0 {
		t.Fatalf("ReceiversLeft %d, FlowTimeouts %d: want 1, 0", st.ReceiversLeft, st.FlowTimeouts)
	}
}
