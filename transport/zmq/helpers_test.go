package zmq

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// testTimeout bounds every wait of a test.
const testTimeout = 20 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// bound starts a publisher bound to a free port on 127.0.0.1 and returns
// it with its endpoint.
func bound(t testing.TB, cfg Config) (*Publisher, string) {
	t.Helper()
	cfg.Bind = []string{"tcp://127.0.0.1:0"}
	p, err := NewPublisher(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, "tcp://" + p.Addrs()[0].(*net.TCPAddr).String()
}

// connected starts a subscriber connected to ep.
func connected(t testing.TB, ep string, cfg Config) *Subscriber {
	t.Helper()
	cfg.Connect = []string{ep}
	s, err := NewSubscriber(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// receive returns the next event of s, failing the test after a while.
func receive(t *testing.T, s transport.Subscriber) transport.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ev, err := s.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return ev
}

// nextMessage skips to the next message event of s.
func nextMessage(t *testing.T, s transport.Subscriber) transport.Message {
	t.Helper()
	for {
		if ev := receive(t, s); ev.Kind == transport.EventMessage {
			return ev.Message
		}
	}
}
