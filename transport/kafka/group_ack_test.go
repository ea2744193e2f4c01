package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestAckBeforeReceiveRefused: a record turned into events of which
// Receive has returned only the partition's StreamStart has not been
// delivered, so an Ack of its offset is refused with ErrNotDelivered
// and commits nothing; once Receive has returned its message, the same
// Ack is taken and committed.
func TestAckBeforeReceiveRefused(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "early", 1)
	cl := newClient(t, addr)
	for i := range 3 {
		produce(t, cl, &kgo.Record{Topic: "early", Value: fmt.Appendf(nil, "%d", i)})
	}
	ctx := context.Background()
	g, err := NewGroupSubscriber(ctx, Config{Brokers: []string{addr}, Topic: "early", Group: "g", Options: groupOpts})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	evs := receiveUntil(t, g, func(evs []transport.Event) bool { return len(evs) == 1 })
	if evs[0].Kind != transport.EventStreamStart {
		t.Fatalf("first event: %v, want the StreamStart", evs[0].Kind)
	}
	stream := evs[0].Start.Stream
	if err := g.Ack(ctx, stream, 0); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("Ack of offset 0, whose message Receive has not returned: %v, want ErrNotDelivered", err)
	}
	ms := messages(receiveUntil(t, g, untilMessages(1)))
	if err := g.Ack(ctx, stream, ms[0].Seq); err != nil {
		t.Fatalf("Ack of offset %d, received: %v", ms[0].Seq, err)
	}
	if err := g.Ack(ctx, stream, ms[0].Seq+1); !errors.Is(err, ErrNotDelivered) {
		t.Fatalf("Ack of offset %d, not received: %v, want ErrNotDelivered", ms[0].Seq+1, err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "early", stream.Partition); c != 1 {
		t.Fatalf("committed %d, want 1", c)
	}
}

// TestAckBehindPendingGap: the events of a record that follows a hole —
// the partition's StreamStart, the Gap, the message — deliver its
// offsets one event at a time: an Ack is refused for an offset whose
// event Receive has not returned yet. The client, of no group and never
// connected, takes an Ack as a no-op.
func TestAckBehindPendingGap(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g", From: AtOffset(2)})}
	g.cl = offlineClient(t)
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	// Offsets 2..4 below the log start: a Gap, without a policy request.
	g.queue = append(g.queue, queued{r: &kgo.Record{Topic: "t", Offset: 5}, logStart: 5})
	stream := transport.StreamID{Topic: "t"}
	ctx := context.Background()
	for _, want := range []transport.EventKind{transport.EventStreamStart, transport.EventGap} {
		ev, ok, err := g.step(ctx)
		if err != nil || !ok || ev.Kind != want {
			t.Fatalf("step: %v %v %v, want %v", ev.Kind, ok, err, want)
		}
		if err := g.Ack(ctx, stream, 5); !errors.Is(err, ErrNotDelivered) {
			t.Fatalf("Ack of offset 5 after the %v, before its message: %v, want ErrNotDelivered", want, err)
		}
	}
	if err := g.Ack(ctx, stream, 4); err != nil {
		t.Fatalf("Ack of offset 4, the end of the Gap received: %v", err)
	}
	if ev, ok, err := g.step(ctx); err != nil || !ok || ev.Kind != transport.EventMessage {
		t.Fatalf("step: %v %v %v, want the message", ev.Kind, ok, err)
	}
	if err := g.Ack(ctx, stream, 5); err != nil {
		t.Fatalf("Ack of offset 5 after its message: %v", err)
	}
}

// offlineClient is a client of no group that never connects (nothing
// asks it to), closed when the test ends: it takes an Ack's mark as a
// no-op.
func offlineClient(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
