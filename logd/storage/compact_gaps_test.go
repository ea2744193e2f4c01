package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompactionDropsEmptiedBatches: batches that compaction empties go
// (Kafka's cleaner drops them; some clients cannot read an empty batch),
// leaving gaps that reads skip to the next batch; sealed segments left
// empty go too, except the first, so the log start offset stays; the
// one exception is an idempotent producer's last batch, kept empty with
// its sequence numbers, which a producer state rebuilt from the log
// still dedupes against. All of it survives a reopen.
func TestCompactionDropsEmptiedBatches(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.SegmentBytes = 1 << 10
	s := mustOpen(t, cfg)
	if err := s.CreateTopic("c", 1, TopicConfig{Cleanup: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	l, _ := s.Partition("c", 0)
	put := func(key string, v int, pid int64, seq int32) AppendResult {
		spec := batchSpec{ts: clk.ms(), pid: -1, epoch: -1, firstSeq: -1,
			recs: []rec{{key: []byte(key), value: fmt.Appendf(nil, "%s=%d", key, v)}}}
		if pid >= 0 {
			spec.pid, spec.epoch, spec.firstSeq = pid, 0, seq
		}
		return appendDurable(t, l, makeBatch(t, spec))
	}
	// An idempotent producer writes k0..k2 and stops; its last batch is
	// at lastIdem. Then a plain producer updates a few keys, rolling
	// several segments, and finally rewrites k0..k2.
	var lastIdem AppendResult
	for i := range 3 {
		lastIdem = put(fmt.Sprint("k", i), 0, 7, int32(i))
	}
	idemTs := clk.ms()
	segments := func() int {
		l.segMu.RLock()
		defer l.segMu.RUnlock()
		return len(l.segs)
	}
	for v := 1; segments() < 6; v++ {
		put(fmt.Sprint("k", v%3), v, -1, 0)
	}
	last := map[string]string{}
	for i := range 3 {
		k := fmt.Sprint("k", i)
		put(k, 1000+i, -1, 0)
		last[k] = fmt.Sprintf("%s=%d", k, 1000+i)
	}
	for range 12 { // roll the last updates into sealed segments too
		put("filler", 0, -1, 0)
	}
	last["filler"] = "filler=0"
	before := segments()
	st, err := l.Compact(clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if st.BatchesRemoved == 0 || st.BatchesEmptied != 1 || st.SegmentsRemoved == 0 {
		t.Fatalf("stats %+v: want batches removed, one kept empty, segments removed", st)
	}
	if segments() != before-st.SegmentsRemoved || l.StartOffset() != 0 {
		t.Fatalf("%d segments (was %d, %d removed), log start %d", segments(), before, st.SegmentsRemoved, l.StartOffset())
	}

	check := func(l *Log) {
		t.Helper()
		got := map[string]string{}
		empty := 0
		walkBatches(t, l, func(p peek, h *kmsg.RecordBatch) {
			if h.NumRecords == 0 {
				empty++
				if h.ProducerID != 7 || p.base != lastIdem.BaseOffset || h.FirstSequence != 2 {
					t.Fatalf("empty batch at %d of producer %d seq %d: only producer 7's last (at %d) may stay",
						p.base, h.ProducerID, h.FirstSequence, lastIdem.BaseOffset)
				}
				// As Kafka's writeEmptyHeader: the original's.
				if h.MaxTimestamp != idemTs {
					t.Errorf("empty batch's MaxTimestamp %d, want its original's %d", h.MaxTimestamp, idemTs)
				}
			}
		})
		for _, r := range readAll(t, l, 0) {
			got[r.key] = string(r.value)
		}
		if fmt.Sprint(got) != fmt.Sprint(last) || empty != 1 {
			t.Fatalf("latest values %v (empty batches %d), want %v and 1", got, empty, last)
		}
		if b, err := l.Read(0, 1); err != nil || len(b) == 0 {
			t.Fatalf("Read from the compacted-away offset 0: %d bytes, %v; want the next batch", len(b), err)
		}
	}
	check(l)

	// Reopen with the producer state rebuilt from the log: the kept
	// header still dedupes a retry of the producer's last batch.
	s.Close()
	if err := os.Remove(filepath.Join(cfg.Dir, "c-0", producerStateFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.Dir, "c-0", recoveryPointFile)); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, cfg)
	defer s.Close()
	l, _ = s.Partition("c", 0)
	check(l)
	retry := makeBatch(t, batchSpec{ts: clk.ms(), pid: 7, epoch: 0, firstSeq: 2,
		recs: []rec{{key: []byte("k2"), value: []byte("k2=0")}}})
	res, err := l.Append(retry)
	if err != nil || !res.Duplicate || res.BaseOffset != lastIdem.BaseOffset {
		t.Fatalf("retry of the producer's last batch: %+v, %v; want a duplicate of offset %d", res, err, lastIdem.BaseOffset)
	}
}
