package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAckDuringRewind: a data loss (offset 9 acknowledged, the mark
// 10, reset to 6) comes with the records the broker holds from 6 on,
// 6..10, and other goroutines' Receive returns them and Ack
// acknowledges offset 10 after take has released mu and before it
// moves the client's mark back (SetOffsets). Ack returns nil, so the
// next commit must carry 11: the client takes the mark 11, and
// SetOffsets then replaces it with 6. (An Ack of 6..9, offsets the
// loss made name two records, commits the reset point only: see
// commitAfter.)
func TestAckDuringRewind(t *testing.T) {
	addr, g, stream := tenDelivered(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := g.Ack(ctx, stream, 9); err != nil {
		t.Fatal(err)
	}
	g.rewinding = func() {
		for o := uint64(6); o <= 10; o++ {
			ev, err := g.Receive(ctx)
			if err != nil || ev.Message.Seq != o {
				t.Errorf("Receive during the rewind: %v, %v; want offset %d", ev, err, o)
				return
			}
		}
		if err := g.Ack(ctx, stream, 10); err != nil {
			t.Errorf("Ack of offset 10 during the rewind: %v", err)
		}
	}
	loss := &kgo.ErrDataLoss{Topic: "loss", Partition: stream.Partition, ConsumedTo: 10, ConsumedToEpoch: -1, ResetTo: 6, ResetToEpoch: -1}
	var rs []*kgo.Record
	for o := int64(6); o <= 10; o++ {
		rs = append(rs, &kgo.Record{Topic: "loss", Partition: stream.Partition, Offset: o, LeaderEpoch: -1, Value: []byte("new")})
	}
	fetches := kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "loss", Partitions: []kgo.FetchPartition{{Partition: stream.Partition, Err: loss, Records: rs}}}}}}
	if err := g.take(fetches); err == nil {
		t.Fatal("take: nil, want the data loss")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "loss", stream.Partition); c != 11 {
		t.Fatalf("offset 10, received after the loss, was acknowledged (nil) during the rewind; Close committed %d, not 11", c)
	}
}
