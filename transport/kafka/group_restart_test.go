package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/transporttest"
)

// TestGivenBackStartsAgain: a partition a rebalance takes from member a
// and later gives back to it starts again — a StreamStart at the offset
// it resumes from, before its first message — since another member may
// have delivered (and a pipe written) from it meanwhile: a consumer
// that keeps state per stream, as a pipe reading its destination's tail
// at each start, must hear of it. a's events stay consistent under the
// transport contract (transporttest.CheckAccounting).
func TestGivenBackStartsAgain(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "back", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceEach := func(n int) {
		for range n {
			for p := range int32(2) {
				produce(t, cl, &kgo.Record{Topic: "back", Partition: p, Value: []byte("x")})
			}
		}
	}
	produceEach(3)
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "back", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour)}, groupOpts...)}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	evs := receiveUntil(t, a, untilMessages(6))
	for _, m := range messages(evs) {
		if m.Seq == 2 {
			if err := a.Ack(ctx, m.Stream, m.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}

	// b takes a partition (the revocation commits a's acknowledgement,
	// 3), delivers what is written to it since, acknowledges nothing,
	// and leaves: the partition goes back to a, at offset 3.
	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	produceEach(2)
	bEvs := receiveUntil(t, b, untilMessages(2))
	if bEvs[0].Kind != transport.EventStreamStart || bEvs[1].Message.Seq != 3 {
		t.Fatalf("b's first events: %v, offset %d; want a StreamStart, offset 3", bEvs[0].Kind, bEvs[1].Message.Seq)
	}
	moved := bEvs[0].Start.Stream
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	evs = append(evs, receiveUntil(t, a, func(evs []transport.Event) bool {
		for _, m := range messages(evs) {
			if m.Stream == moved {
				return true
			}
		}
		return false
	})...)
	var starts []transport.StreamStart
	var first transport.Message
	for _, ev := range evs {
		switch {
		case ev.Kind == transport.EventStreamStart && ev.Start.Stream == moved:
			starts = append(starts, ev.Start)
		case ev.Kind == transport.EventMessage && ev.Message.Stream == moved && ev.Message.Seq >= 3:
			first = ev.Message
		}
	}
	if len(starts) != 2 || starts[1].FirstSeq != 3 || first.Seq != 3 {
		t.Fatalf("a's starts of %s: %+v, then offset %d; want two, the second at 3, then offset 3 (b delivered 3 and 4 without committing)",
			moved, starts, first.Seq)
	}
	if err := transporttest.CheckAccounting(evs, false); err != nil {
		t.Fatalf("a's events: %v", err)
	}
}

// TestGivenBackAfterGap: a partition revoked once Receive had returned
// the Gap before a record, not the record, starts again at that record
// when it comes back: the Gap is not reported again, which would put
// the new start's FirstSeq below what was reported.
func TestGivenBackAfterGap(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
	g.policy = cleanupPolicy{known: true} // no request for it
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	st := g.parts[0]
	st.started, st.next, st.delivered = true, 2, 2
	g.queue = append(g.queue, queued{r: &kgo.Record{Topic: "t", Offset: 5}, logStart: 0})
	ev, ok, err := g.step(context.Background())
	if !ok || err != nil || ev.Kind != transport.EventGap {
		t.Fatalf("first event: %v %v %v, want the Gap", ev.Kind, ok, err)
	}
	g.disown([]int32{0})
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0}})
	g.queue = append(g.queue, queued{r: &kgo.Record{Topic: "t", Offset: 5}, logStart: 0})
	var evs []transport.Event
	for {
		ev, ok, err := g.step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	if len(evs) != 2 || evs[0].Kind != transport.EventStreamStart || evs[0].Start.FirstSeq != 5 || evs[1].Kind != transport.EventMessage {
		t.Fatalf("events once given back: %+v; want a StreamStart at 5, then offset 5", evs)
	}
}
