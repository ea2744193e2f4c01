package multicast

import (
	"context"
	"errors"
	"net"
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

// TestCloseReportsMessagesFlowControlHeld: Close while flow control
// holds published messages (the only receiver took one datagram and
// made no more room) cannot send them within CloseLinger. It says so,
// with an *UnsentError naming them, and its END names the last message
// published, so subscribers report the unsent ones as a Gap.
func TestCloseReportsMessagesFlowControlHeld(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender.Flow = reliable.FlowConfig{Mode: reliable.FlowMin}
	cfg.CloseLinger = 100 * time.Millisecond
	ifi, _, err := iface("lo")
	if err != nil {
		t.Fatal(err)
	}
	// A bare listener on the group, to see what the publisher sends.
	lis, err := listenUDP(context.Background(), cfg.Group, reuseAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	if err := join(lis, ifi, cfg.Group.Addr()); err != nil {
		t.Fatal(err)
	}
	p := mustPub(t, cfg)
	rc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	st := reliable.AppendStatus(nil, p.Stream(), reliable.Status{Receiver: 42, Next: 1, Window: 1})
	if _, err := rc.WriteToUDPAddrPort(st, p.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().StatusReceived == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		if err := p.Publish(context.Background(), transport.Message{Payload: make([]byte, 1000)}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := p.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeErr := p.Close()
	var ue *UnsentError
	if !errors.As(closeErr, &ue) || !errors.Is(closeErr, ErrUnsent) || ue.From != 2 || ue.Messages != 2 {
		t.Fatalf("Close: %v, want an *UnsentError for 2 messages from sequence 2", closeErr)
	}
	buf := make([]byte, 65536)
	var endNext uint64
	_ = lis.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		n, _, err := lis.ReadFromUDPAddrPort(buf)
		if err != nil {
			break
		}
		h, err := reliable.ParseHeader(buf[:n])
		if err == nil && h.Stream == p.Stream() && h.Type == reliable.TypeEnd {
			b, _ := reliable.ParseBeat(buf[:n])
			endNext = b.Next
		}
	}
	if endNext != ue.To+1 {
		t.Fatalf("END next %d, want %d: the last sequence number published is %d", endNext, ue.To+1, ue.To)
	}
}
