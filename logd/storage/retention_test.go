package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// segmentDeletes counts OnSegmentDelete calls.
type segmentDeletes struct{ n int }

func (h *segmentDeletes) OnSegmentDelete(string, int32, int64, int64) { h.n++ }

func TestRetentionByAge(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.RetentionAge = time.Hour
	h := &segmentDeletes{}
	cfg.Hooks = []Hook{h}
	s, l := openPartition(t, cfg)
	defer s.Close()
	// Two hours of batches, a minute apart, several per segment.
	for range 120 {
		appendDurable(t, l, simpleBatch(t, string(make([]byte, 2000)), 1, clk.ms()))
		clk.add(time.Minute)
	}
	segs := segsOf(l)
	n, err := l.ApplyRetention(clk.now())
	if err != nil || n == 0 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if h.n != n || segsOf(l) != segs-n {
		t.Fatalf("hook saw %d deletions of %d; %d → %d segments", h.n, n, segs, segsOf(l))
	}
	// Everything older than an hour is gone, nothing younger.
	start := l.StartOffset()
	if start == 0 {
		t.Fatal("start offset did not move")
	}
	if _, err := l.Read(start-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v", err)
	}
	recs := readAll(t, l, start)
	if recs[0].offset != start || recs[0].ts < clk.ms()-time.Hour.Milliseconds()-20*time.Minute.Milliseconds() {
		t.Fatalf("first kept record %+v", recs[0])
	}
	l.mu.Lock()
	for _, sg := range l.segs[:len(l.segs)-1] {
		if sg.maxTs < clk.ms()-time.Hour.Milliseconds() {
			t.Errorf("segment %d with newest timestamp %d kept", sg.base, sg.maxTs)
		}
	}
	l.mu.Unlock()
	// Survives reopen.
	s.Close()
	s, l = openPartition(t, cfg)
	defer s.Close()
	if l.StartOffset() != start {
		t.Fatalf("start %d after reopen, want %d", l.StartOffset(), start)
	}
	// Past every timestamp, all but the active segment go.
	clk.add(24 * time.Hour)
	if err := s.Maintain(clk.now()); err != nil {
		t.Fatal(err)
	}
	if segsOf(l) != 1 {
		t.Fatalf("%d segments left", segsOf(l))
	}
}

func TestRetentionBySize(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.RetentionBytes = 40 << 10
	cfg.RetentionAge = -1
	s, l := openPartition(t, cfg)
	defer s.Close()
	for range 100 {
		appendDurable(t, l, simpleBatch(t, string(make([]byte, 1000)), 1, clk.ms()))
	}
	if _, err := l.ApplyRetention(clk.now()); err != nil {
		t.Fatal(err)
	}
	if size := l.Size(); size < cfg.RetentionBytes || size > cfg.RetentionBytes+cfg.SegmentBytes {
		t.Fatalf("size %d after retention to %d (segments of %d)", size, cfg.RetentionBytes, cfg.SegmentBytes)
	}
	if n, _ := l.ApplyRetention(clk.now()); n != 0 {
		t.Fatalf("second pass deleted %d", n)
	}
	// Compacted topics keep everything.
	if err := s.CreateTopic("c", 1, TopicConfig{Cleanup: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Partition("c", 0)
	for range 100 {
		appendDurable(t, c, simpleBatch(t, string(make([]byte, 1000)), 1, clk.ms()))
	}
	if n, _ := c.ApplyRetention(clk.now().Add(1000 * time.Hour)); n != 0 {
		t.Fatalf("retention deleted %d segments of a compacted topic", n)
	}
}

// TestRetentionGoesByRecordTimestamps: a batch whose header understates
// its records' timestamps is kept for the retention age of its newest
// record, as by Kafka, which sets MaxTimestamp from the records. It was
// once stored as sent, and its segment deleted an age after the
// header's timestamp: records a minute old went with it.
func TestRetentionGoesByRecordTimestamps(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.RetentionAge = time.Hour
	s, l := openPartition(t, cfg)
	defer s.Close()
	now := clk.ms()
	b := makeBatch(t, batchSpec{ts: now - 2*time.Hour.Milliseconds(), pid: -1, epoch: -1, firstSeq: -1,
		recs: []rec{{value: []byte("old")}, {value: []byte("new"), tsDelta: 2*time.Hour.Milliseconds() - time.Minute.Milliseconds()}}})
	var h kmsg.RecordBatch
	if err := h.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	h.MaxTimestamp = h.FirstTimestamp // the producer's header says two hours ago
	b, err := buildBatch(nil, &h, h.Records)
	if err != nil {
		t.Fatal(err)
	}
	appendDurable(t, l, b)
	l.mu.Lock()
	err = l.roll()
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.ApplyRetention(clk.now()); err != nil || n != 0 {
		t.Fatalf("retention deleted %d segments (%v): a record a minute old went", n, err)
	}
	if got := readAll(t, l, 0); len(got) != 2 {
		t.Fatalf("%d records kept, want 2", len(got))
	}
}
