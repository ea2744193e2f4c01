package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport"
)

// TestStreamIdentity: a message's stream is its topic and partition, by
// name (Feed and Session zero), and its Seq is its offset.
func TestStreamIdentity(t *testing.T) {
	addr := startLogd(t)
	createTopic(t, addr, "ids", 3)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range 9 {
		rs = append(rs, &kgo.Record{Topic: "ids", Partition: int32(i % 3), Value: fmt.Appendf(nil, "v%d", i)})
	}
	produce(t, cl, rs...)

	sub, err := NewSubscriber(context.Background(), parse(t, "logd://"+addr+"/ids"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got := map[string]transport.Message{}
	for _, m := range messages(receiveUntil(t, sub, untilMessages(len(rs)))) {
		got[string(m.Payload)] = m
	}
	for _, r := range rs {
		m := got[string(r.Value)]
		want := transport.StreamID{Topic: "ids", Partition: r.Partition}
		if m.Stream != want || m.Seq != uint64(r.Offset) {
			t.Errorf("%s: stream %+v seq %d, want %+v seq %d", r.Value, m.Stream, m.Seq, want, r.Offset)
		}
	}
}
