package multicast

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// TestFlowHeldSleeps: a Publish held by flow control sleeps until
// something may let it on (a STATUS, a receiver's expiry, its context),
// instead of taking turns with the send goroutine, each waking the
// other for nothing, as fast as the scheduler ran them (a spin that
// starved the process's other goroutines: a recorder's pipe stood still
// for hundreds of milliseconds). Here no receiver ever reports, so
// nothing lets it on: it is held once, and again after each datagram
// the send goroutine writes (heartbeats, 1, 2, 4 … 100 ms apart: 10
// holds in all here), not tens of thousands (71,228 and 139,068 before).
func TestFlowHeldSleeps(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin, MinReceivers: 1}
	p := mustPub(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := p.Publish(ctx, transport.Message{Payload: []byte("x")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish with no receiver: %v, want the context's deadline", err)
	}
	if held := p.Stats().FlowHeld; held > 100 {
		t.Fatalf("held %d times in 300 ms with nothing to let it on: it spun", held)
	}
}
