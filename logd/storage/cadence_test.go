package storage

import (
	"fmt"
	"testing"
	"time"
)

// compactSignal tells a test that a compaction pass rewrote segments.
type compactSignal chan CompactStats

func (c compactSignal) OnCompact(_ string, _ int32, st CompactStats) {
	select {
	case c <- st:
	default:
	}
}

// TestCompactOnSeal: with background maintenance on, a compacted
// partition is compacted as soon as one of its segments is sealed, not
// at the next periodic pass (an hour away here); a partition that does
// not compact is left alone.
func TestCompactOnSeal(t *testing.T) {
	done := make(compactSignal, 1)
	cfg := Config{Dir: t.TempDir(), SegmentBytes: 2 << 10, MaintenanceInterval: time.Hour, Hooks: []Hook{done}}
	s := mustOpen(t, cfg)
	defer s.Close()
	if err := s.CreateTopic("kv", 1, TopicConfig{Cleanup: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTopic("plain", 1, TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	fill := func(topic string) {
		l, _ := s.Partition(topic, 0)
		segments := func() int {
			l.segMu.RLock()
			defer l.segMu.RUnlock()
			return len(l.segs)
		}
		for i := 0; segments() < 2; i++ {
			spec := batchSpec{ts: time.Now().UnixMilli(), pid: -1, epoch: -1, firstSeq: -1,
				recs: []rec{{key: []byte(fmt.Sprint("k", i%3)), value: fmt.Appendf(nil, "v%d", i)}}}
			appendDurable(t, l, makeBatch(t, spec))
		}
	}
	fill("plain")
	select {
	case st := <-done:
		t.Fatalf("a partition that does not compact was compacted: %+v", st)
	case <-time.After(100 * time.Millisecond):
	}
	fill("kv")
	select {
	case st := <-done:
		if st.Rewritten == 0 || st.Dropped == 0 {
			t.Fatalf("compaction on sealing: %+v", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sealing a segment of a compacted partition did not compact it")
	}
}
