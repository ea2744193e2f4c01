package kafka

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestCloseWaitsForReceipts: when Close returns, the done of every
// record PublishReceipt took has been called — here with the error of
// records the broker never acknowledged — so that a caller may release
// what its done uses (close a channel it sends to) once Close returns.
// Each done takes a moment, as a receiver's work would, so that receipts
// still on their way when Close returns are seen.
func TestCloseWaitsForReceipts(t *testing.T) {
	srv := startChildLogd(t)
	pub := newPublisher(t, "logd://"+srv.addr+"/t")
	ctx := context.Background()
	if err := pub.Publish(ctx, transport.Message{Payload: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	const n = 50
	var called, failed atomic.Int64
	for range n {
		err := pub.PublishReceipt(ctx, transport.Message{Payload: []byte("lost")}, func(_ transport.Receipt, err error) {
			time.Sleep(2 * time.Millisecond)
			if err != nil {
				failed.Add(1)
			}
			called.Add(1)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(); err == nil {
		t.Error("Close: nil, with records unacknowledged")
	}
	if c, f := called.Load(), failed.Load(); c != n || f != n {
		t.Fatalf("when Close returned: %d of %d receipts called, %d failed", c, n, f)
	}
}
