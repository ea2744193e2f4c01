package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestFromOffsetPastEndStartsAtEnd: as AtOffset says, a subscriber
// asked to start past the end of a partition (a saved offset of a log
// since recreated) starts at the end: it delivers what is published
// after it started, and none of the records before (the client, left
// to itself, reset to the log's start and replayed them all).
func TestFromOffsetPastEndStartsAtEnd(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "past", 1)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("past"))
	for i := range 10 {
		produce(t, cl, &kgo.Record{Value: fmt.Appendf(nil, "old-%d", i)})
	}
	sub, err := NewSubscriber(context.Background(), parse(t, "logd://"+addr+"/past?from=1000"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	ev, err := sub.Receive(ctx)
	cancel()
	if err == nil && ev.Kind == transport.EventMessage {
		t.Fatalf("before anything new was published: message %d %q", ev.Message.Seq, ev.Message.Payload)
	}
	produce(t, cl, &kgo.Record{Value: []byte("new")})
	evs := receiveUntil(t, sub, untilMessages(1))
	t.Logf("events: %s", describe(evs))
	if ms := messages(evs); string(ms[0].Payload) != "new" || ms[0].Seq != 10 {
		t.Fatalf("first message %d %q, want 10 \"new\"", ms[0].Seq, ms[0].Payload)
	}
}
