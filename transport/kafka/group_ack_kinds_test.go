package kafka

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestAckEveryKindReceived: whatever a record turns into — a message, a
// Gap of the offsets skipped before it, the Gap a gap marker stands for,
// nothing (a transaction marker) — once Receive has returned its last
// event, an Ack of its offset, and of a skipped offset once their Gap is
// returned, is taken: a pipe acknowledges exactly these.
func TestAckEveryKindReceived(t *testing.T) {
	g := &GroupSubscriber{Subscriber: newSubscriber(Config{Topic: "t", Group: "g"})}
	g.cl = offlineClient(t)
	g.assigned(context.Background(), nil, map[string][]int32{"t": {0, 1}})
	marker := transport.GapMarker(transport.Gap{Stream: transport.StreamID{Session: 7}, From: 1, To: 2, Reason: transport.GapRetention}, time.Unix(1, 0))
	var hs []kgo.RecordHeader
	for _, h := range marker.Headers {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	recs := []queued{
		{r: &kgo.Record{Topic: "t", Partition: 0, Offset: 0}, logStart: 0},
		{r: &kgo.Record{Topic: "t", Partition: 1, Offset: 0}, logStart: 0},
		{r: controlRecord(0, 1), logStart: 0},
		// Offsets 2..3 below the log start: a Gap, then the marker's.
		{r: &kgo.Record{Topic: "t", Partition: 0, Offset: 4, Headers: hs, Value: marker.Payload}, logStart: 4},
		{r: controlRecord(1, 3), logStart: 3},
		{r: &kgo.Record{Topic: "t", Partition: 1, Offset: 4}, logStart: 3},
	}
	g.queue = append(g.queue, recs...)
	ctx := context.Background()
	acks := map[int32]uint64{}
	for {
		ev, ok, err := g.step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		switch {
		case ev.Kind == transport.EventMessage:
			acks[ev.Message.Stream.Partition] = ev.Message.Seq
		case ev.Kind == transport.EventGap && ev.Gap.Stream.Topic == "t":
			acks[ev.Gap.Stream.Partition] = ev.Gap.To
		}
		for p, seq := range acks {
			if err := g.Ack(ctx, transport.StreamID{Topic: "t", Partition: p}, seq); err != nil {
				t.Fatalf("after a %v: Ack of partition %d offset %d, received: %v", ev.Kind, p, seq, err)
			}
		}
	}
	for p, last := range map[int32]uint64{0: 4, 1: 4} {
		if err := g.Ack(ctx, transport.StreamID{Topic: "t", Partition: p}, last); err != nil {
			t.Errorf("Ack of partition %d's last offset %d, received: %v", p, last, err)
		}
	}
}

// controlRecord is a transaction marker of partition p at offset.
func controlRecord(p int32, offset int64) *kgo.Record {
	r := &kgo.Record{Topic: "t", Partition: p, Offset: offset}
	// RecordAttrs is kgo's attribute byte, unexported; bit 5 marks a
	// control record.
	*(*uint8)(unsafe.Pointer(&r.Attrs)) = 0x20
	if !r.Attrs.IsControl() {
		panic("kgo.RecordAttrs changed layout")
	}
	return r
}
