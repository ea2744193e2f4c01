package kafka

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestBadTopicRefusedAtTheCall: a message whose topic Kafka would refuse
// is refused by the call that publishes it, as Publish does, not later
// through a receipt. A batch call takes the messages before it, whose
// receipts come as usual, and reports how many it took; the message
// refused and those after it get no receipt.
func TestBadTopicRefusedAtTheCall(t *testing.T) {
	addr := startLogd(t)
	ctx := context.Background()
	pub := newPublisher(t, "logd://"+addr+"/good")
	const bad = "bad topic!"
	if err := pub.Publish(ctx, transport.Message{Topic: bad, Payload: []byte("x")}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("Publish to topic %q: %v", bad, err)
	}
	for _, tc := range []struct {
		name    string
		publish func(context.Context, []transport.Message, func(int, transport.Receipt, error)) (int, error)
	}{
		{"PublishReceipts", pub.PublishReceipts},
		{"PublishReceiptsInPlace", pub.PublishReceiptsInPlace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				calls = map[int]error{}
			)
			ms := []transport.Message{{Payload: []byte("0")}, {Topic: bad, Payload: []byte("1")}, {Payload: []byte("2")}}
			took, err := tc.publish(ctx, ms, func(i int, _ transport.Receipt, err error) {
				mu.Lock()
				defer mu.Unlock()
				calls[i] = err
			})
			if took != 1 || err == nil || !strings.Contains(err.Error(), bad) {
				t.Fatalf("took %d, %v; want 1 and the bad topic's error", took, err)
			}
			if err := pub.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if err, ok := calls[0]; len(calls) != 1 || !ok || err != nil {
				t.Fatalf("receipts: %v; want message 0's only, without an error", calls)
			}
		})
	}
}
