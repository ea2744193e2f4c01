package kafka

import (
	"context"
	"strings"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestCloseSaysWhatWasNotAcknowledged: a Close whose broker stopped
// answering fails, after closeFlush, saying that what was published was
// not acknowledged, not a bare "context deadline exceeded".
func TestCloseSaysWhatWasNotAcknowledged(t *testing.T) {
	srv := startChildLogd(t)
	pub := newPublisher(t, "logd://"+srv.addr+"/t")
	ctx := context.Background()
	if err := pub.Publish(ctx, transport.Message{Payload: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	srv.kill() // its listener stays open: connections wait in the backlog
	if err := pub.Publish(ctx, transport.Message{Payload: []byte("two")}); err != nil {
		t.Fatal(err)
	}
	err := pub.Close()
	if err == nil || !strings.Contains(err.Error(), "kafka transport: close: what was published was not acknowledged within 5s") {
		t.Errorf("Close: %v", err)
	}
}
