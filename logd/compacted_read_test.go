package logd

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestKafkaPythonReadsCompactedTopic: Debian's kafka-python 2.0.2 reads
// a compacted topic from offset 0 after compaction and gets the latest
// value of every key. It cannot take a record batch with no records
// (IndexError in its fetcher), so compaction must drop the batches it
// empties rather than keep empty ones; reads from offsets compaction
// removed go on with the next batch.
func TestKafkaPythonReadsCompactedTopic(t *testing.T) {
	pythonKafka(t)
	ts := startServer(t, t.TempDir(), func(c *Config) { c.Storage.MaintenanceInterval = -1 })
	createTopic(t, newClient(t, ts.addr), "kv", 1, "cleanup.policy", "compact", "segment.bytes", "1024")
	const updates, keys = 600, 5
	runPython(t, `
import sys
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1], acks="all")
for i in range(int(sys.argv[2])):
    p.send("kv", key=b"k%d" % (i % int(sys.argv[3])), value=b"v%d" % i)
    p.flush()  # one batch per update
p.close()
`, ts.addr, fmt.Sprint(updates), fmt.Sprint(keys))
	if err := ts.store.Maintain(time.Now()); err != nil {
		t.Fatal(err)
	}
	out := runPython(t, `
import sys, json
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=sys.argv[1], enable_auto_commit=False, auto_offset_reset="earliest")
tp = TopicPartition("kv", 0)
c.assign([tp])
c.seek(tp, 0)
end = c.end_offsets([tp])[tp]
latest, n, offsets = {}, 0, []
while c.position(tp) < end:
    for msgs in c.poll(timeout_ms=1000).values():
        for m in msgs:
            latest[m.key.decode()] = m.value.decode()
            offsets.append(m.offset)
            n += 1
c.close()
print(json.dumps({"latest": latest, "records": n, "sorted": offsets == sorted(offsets), "end": end}))
`, ts.addr)
	var got struct {
		Latest  map[string]string
		Records int
		Sorted  bool
		End     int64
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("kafka-python said %q: %v", out, err)
	}
	if got.End != updates || got.Records >= updates || !got.Sorted {
		t.Fatalf("read %d records (offsets ascending: %v) of %d up to end %d: want fewer after compaction", got.Records, got.Sorted, updates, got.End)
	}
	for k := range keys {
		last := updates - keys + k // the last update of key k
		if v := got.Latest[fmt.Sprint("k", k)]; v != fmt.Sprint("v", last) {
			t.Fatalf("key k%d: latest %q, want v%d (all %v)", k, v, last, got.Latest)
		}
	}
	t.Logf("kafka-python read %d of %d records after compaction", got.Records, updates)
}
