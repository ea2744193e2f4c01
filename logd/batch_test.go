package logd

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordBatch builds one uncompressed RecordBatch v2 holding values, as
// a non-idempotent producer sends it.
func recordBatch(values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta, r.Value = int32(i), v
		body := r.AppendTo(nil)[1:] // the record without its length (0, one byte)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceBatch sends batch to partition 0 of topic in one Produce
// request (acks=all) and fails the test unless it is stored.
func produceBatch(t testing.TB, cl *kgo.Client, topic string, batch []byte) {
	t.Helper()
	if code := rawProduce(t, cl, topic, batch); code != 0 {
		t.Fatalf("produce to %s: error %d", topic, code)
	}
}
