package multicast

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestPublishWritesAndAnswersNacks: a Publish call that finds no write in
// flight writes itself, and answers the NACKs waiting for the send
// goroutine first, so that a publisher writing from its own goroutine
// does not leave repairs behind. The NACK is put in the inbox without
// waking the send goroutine (and heartbeats are an hour apart), so only
// Publish can have answered it by the time it returns.
func TestPublishWritesAndAnswersNacks(t *testing.T) {
	cfg := testConfig(t)
	cfg.InlineAfter = time.Nanosecond
	cfg.Sender.HeartbeatMin, cfg.Sender.HeartbeatMax = time.Hour, time.Hour
	p := mustPub(t, cfg)
	ctx := context.Background()
	for i := range 10 {
		if err := p.Publish(ctx, transport.Message{Payload: indexed(i, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitSendLoopAsleep(t, p)
	before := p.Stats()
	nack := reliable.AppendRanges(nil, reliable.TypeNack, p.Stream(), []reliable.Range{{From: 1, To: 1}})
	p.inbox.put(nack, netip.MustParseAddrPort("127.0.0.1:9"))
	if err := p.Publish(ctx, transport.Message{Payload: indexed(10, 64)}); err != nil {
		t.Fatal(err)
	}
	after := p.Stats()
	if after.NacksReceived != before.NacksReceived+1 || after.Repairs == before.Repairs {
		t.Fatalf("Publish returned with the NACK unanswered: NACKs %d → %d, repairs %d → %d",
			before.NacksReceived, after.NacksReceived, before.Repairs, after.Repairs)
	}
	if after.Datagrams == before.Datagrams || after.SendCalls == before.SendCalls {
		t.Fatalf("Publish returned with its message unsent: datagrams %d → %d, send calls %d → %d",
			before.Datagrams, after.Datagrams, before.SendCalls, after.SendCalls)
	}
}

// waitSendLoopAsleep waits until p's send goroutine sleeps with nothing
// to send (it goes to sleep on its own after a Flush).
func waitSendLoopAsleep(t *testing.T, p *Publisher) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		idle := p.idle && !p.writing
		p.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the send goroutine never went to sleep")
		}
		runtime.Gosched()
	}
}
