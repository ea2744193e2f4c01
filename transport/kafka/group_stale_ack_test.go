package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/transport"
)

// TestStaleAckAfterReturnNotCommitted: a partition a rebalance takes
// from member a and later hands back to it starts at what the other
// member committed; an acknowledgement a made before losing it, arriving
// late (a pipe's destination accepting an old message), is below that
// commit and must not move it back — once a has delivered new records
// of the partition too, whose leader epoch the late acknowledgement
// would otherwise be committed with, which franz-go takes for a mark
// after the commit.
func TestStaleAckAfterReturnNotCommitted(t *testing.T) {
	addr := startLogd(t, fastGroups)
	createTopic(t, addr, "stale", 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const per = 20
	for i := range per {
		for p := range int32(2) {
			produce(t, cl, &kgo.Record{Topic: "stale", Partition: p, Value: fmt.Appendf(nil, "%d", i)})
		}
	}
	ctx := context.Background()
	cfg := Config{Brokers: []string{addr}, Topic: "stale", Group: "g",
		Options: append([]kgo.Opt{kgo.AutoCommitInterval(time.Hour)}, groupOpts...)}
	a, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	receiveUntil(t, a, untilMessages(2*per))

	// b takes one partition, delivers and acknowledges all of it, and
	// leaves: the partition goes back to a, at b's commit.
	b, err := NewGroupSubscriber(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(receiveUntil(t, b, untilMessages(per)))
	moved := ms[0].Stream
	if err := b.Ack(ctx, moved, per-1); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "stale", moved.Partition); c != per {
		t.Fatalf("b committed %d, want %d", c, per)
	}
	// The partition's leader changed meanwhile: the new record has a
	// later leader epoch than the commit (on logd, which keeps the
	// epoch a batch is written with, a batch saying so).
	produceEpoch(t, cl, "stale", moved.Partition, 3, []byte("new"))
	back := messages(receiveUntil(t, a, func(evs []transport.Event) bool {
		for _, m := range messages(evs) {
			if m.Stream == moved {
				return true
			}
		}
		return false
	}))
	if m := back[len(back)-1]; m.Stream != moved || m.Seq != per {
		t.Fatalf("a's first message after the partition came back: %s@%d, want %s@%d", m.Stream, m.Seq, moved, per)
	}

	// The late acknowledgement of offset 9, delivered by a before the
	// partition moved.
	if err := a.Ack(ctx, moved, 9); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if c := committed(t, addr, "g", "stale", moved.Partition); c != per {
		t.Fatalf("after a late acknowledgement of offset 9, the group's commit is %d, want %d (b's): it went back", c, per)
	}
}

// produceEpoch writes value to partition p of topic in a record batch
// of leader epoch epoch, as a Kafka broker stamps it: a franz-go
// producer sends -1, which logd keeps.
func produceEpoch(t testing.TB, cl *kgo.Client, topic string, p, epoch int32, value []byte) {
	t.Helper()
	r := kmsg.NewRecord()
	r.Value = value
	body := r.AppendTo(nil)[1:] // the record without its length (0, one byte)
	recs := binary.AppendVarint(nil, int64(len(body)))
	recs = append(recs, body...)
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: epoch, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: recs,
	}
	batch := b.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[8:], uint32(len(batch)-12))
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce to %s/%d: error %d", topic, p, code)
	}
}
