package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// timestampsLog builds a compact,delete partition whose first batch's
// newest record is superseded by a later record of its key carrying an
// older timestamp (CreateTime: the producer's clock):
//
//	segment 0: offsets 0,1 a@t0 b@t0+2h (codec); offset 2 d@t0+10m
//	segment 1: offset 3 b@t0+1h
//	active:    offset 4 c@t0+30m
//
// Segments roll by SegmentAge; every batch gets a time-index entry.
func timestampsLog(t *testing.T, clk *testClock, codec int) (Config, *Store, *Log, int64) {
	t.Helper()
	cfg := testConfig(t, clk)
	cfg.SegmentAge = time.Hour
	cfg.IndexIntervalBytes = 1
	cfg.RetentionAge = 24 * time.Hour
	s := mustOpen(t, cfg)
	if err := s.CreateTopic("c", 1, TopicConfig{Cleanup: CleanupCompactDelete}); err != nil {
		t.Fatal(err)
	}
	l, _ := s.Partition("c", 0)
	t0 := clk.ms()
	put := func(ts int64, codec int, recs ...rec) {
		appendDurable(t, l, makeBatch(t, batchSpec{ts: ts, pid: -1, epoch: -1, firstSeq: -1, codec: codec, recs: recs}))
	}
	hour := time.Hour.Milliseconds()
	put(t0, codec, rec{key: []byte("a"), value: []byte("a0")}, rec{key: []byte("b"), value: []byte("b0"), tsDelta: 2 * hour})
	put(t0+10*time.Minute.Milliseconds(), codecNone, rec{key: []byte("d"), value: []byte("d0")})
	clk.add(time.Hour)
	put(t0+hour, codecNone, rec{key: []byte("b"), value: []byte("b1")})
	clk.add(time.Hour)
	put(t0+30*time.Minute.Milliseconds(), codecNone, rec{key: []byte("c"), value: []byte("c0")})
	if n := len(l.segs); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	return cfg, s, l, t0
}

// segmentTimes decodes the time index file of the segment at base.
func segmentTimes(t *testing.T, cfg Config, base int64) []timeEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cfg.Dir, "c-0", segmentName(base)+timeIndexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var out []timeEntry
	for ; len(b) >= timeEntryLen; b = b[timeEntryLen:] {
		out = append(out, decodeTime(b))
	}
	return out
}

// TestCompactionRecomputesMaxTimestamp: a batch rebuilt around the
// records compaction keeps gets the largest timestamp of those records
// as its MaxTimestamp (CreateTime), as Kafka's cleaner rebuilds it, and
// that is what the segment's largest timestamp and time index, hence
// ListOffsets' MAX_TIMESTAMP (-3) and time retention, go by. Kept, the
// original's would name the timestamp of a record that is gone: -3
// answered it with no offset, and retention kept the segment for it.
func TestCompactionRecomputesMaxTimestamp(t *testing.T) {
	for _, codec := range []int{codecNone, codecGzip, codecZstd} {
		t.Run(fmt.Sprint("codec", codec), func(t *testing.T) {
			clk := newClock()
			cfg, s, l, t0 := timestampsLog(t, clk, codec)
			defer func() { s.Close() }()
			hour, minute := time.Hour.Milliseconds(), time.Minute.Milliseconds()
			st, err := l.Compact(clk.now())
			if err != nil || st.Dropped != 1 || st.Rewritten != 1 {
				t.Fatalf("compact: %+v, %v; want one record dropped, one segment rewritten", st, err)
			}
			var first kmsg.RecordBatch
			walkBatches(t, l, func(p peek, h *kmsg.RecordBatch) {
				if p.base == 0 {
					first = *h
				}
			})
			if first.NumRecords != 1 || first.MaxTimestamp != t0 || first.FirstTimestamp != t0 ||
				first.Attributes != int16(codec) || first.LastOffsetDelta != 1 {
				t.Errorf("rebuilt batch: %d records, first ts %d, max ts %d, attributes %#x, last delta %d; want 1, %d, %d, %#x, 1",
					first.NumRecords, first.FirstTimestamp-t0, first.MaxTimestamp-t0, first.Attributes, first.LastOffsetDelta, 0, 0, codec)
			}
			want := fmt.Sprint([]decoded{{0, t0, "a", []byte("a0")}, {2, t0 + 10*minute, "d", []byte("d0")},
				{3, t0 + hour, "b", []byte("b1")}, {4, t0 + 30*minute, "c", []byte("c0")}})
			if got := fmt.Sprint(readAll(t, l, 0)); got != want {
				t.Errorf("records %s, want %s", got, want)
			}

			check := func(l *Log, when string) {
				t.Helper()
				if got := l.segs[0].maxTs; got != t0+10*minute {
					t.Errorf("%s: segment 0's largest timestamp t0%+dms, want t0+10m", when, got-t0)
				}
				for _, e := range segmentTimes(t, cfg, 0) {
					if e.ts > t0+10*minute {
						t.Errorf("%s: segment 0's time index has t0%+dms (at relative offset %d), past its records' t0+10m", when, e.ts-t0, e.rel)
					}
				}
				max, err := l.MaxTimestamp()
				if err != nil || max != t0+hour {
					t.Errorf("%s: MaxTimestamp t0%+dms, %v; want t0+1h", when, max-t0, err)
				}
				off, ts, err := l.OffsetForTime(max)
				if err != nil || off != 3 || ts != t0+hour {
					t.Errorf("%s: OffsetForTime(MaxTimestamp) = %d, t0%+dms, %v; want 3, t0+1h (MAX_TIMESTAMP)", when, off, ts-t0, err)
				}
				if off, _, err := l.OffsetForTime(t0 + 90*minute); err != nil || off != -1 {
					t.Errorf("%s: OffsetForTime(t0+90m) = %d, %v; want -1: no record is that late", when, off, err)
				}
				if off, ts, err := l.OffsetForTime(t0 + 5*minute); err != nil || off != 2 || ts != t0+10*minute {
					t.Errorf("%s: OffsetForTime(t0+5m) = %d, t0%+dms, %v; want 2, t0+10m", when, off, ts-t0, err)
				}
			}
			check(l, "compacted")
			s.Close()
			s = mustOpen(t, cfg)
			l, _ = s.Partition("c", 0)
			check(l, "reopened")

			// Past t0+10m+24h segment 0 is past retention; segment 1
			// (t0+1h) is not.
			n, err := l.ApplyRetention(time.UnixMilli(t0 + 24*hour + 30*minute))
			if err != nil || n != 1 || l.StartOffset() != 3 {
				t.Errorf("retention at t0+24h30m: %d segments deleted, %v, log start %d; want 1, 3", n, err, l.StartOffset())
			}
		})
	}
}

// TestCompactionKeepsLogAppendTime: a LogAppendTime batch rebuilt by
// compaction keeps its MaxTimestamp, the time the log appended it, which
// every record of it has (Kafka's cleaner passes it on as the builder's
// log append time), whatever records it lost.
func TestCompactionKeepsLogAppendTime(t *testing.T) {
	clk := newClock()
	_, s, l, t0 := timestampsLog(t, clk, codecNone)
	defer s.Close()
	appended := t0 + 5*time.Hour.Milliseconds()
	// The first batch becomes one the log stamped LogAppendTime (appends
	// store CreateTime: it can only come from older data).
	f := l.segs[0].log
	b := make([]byte, batchPeekLen)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	p, _ := peekBatch(b)
	b = make([]byte, p.size)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint16(b[batchCRCStart:], attrLogAppendTime)
	binary.BigEndian.PutUint64(b[batchMaxTsPos:], uint64(appended))
	binary.BigEndian.PutUint32(b[batchCRCPos:], crc32Castagnoli(b[batchCRCStart:]))
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if st, err := l.Compact(clk.now()); err != nil || st.Dropped != 1 {
		t.Fatalf("compact: %+v, %v; want one record dropped", st, err)
	}
	walkBatches(t, l, func(p peek, h *kmsg.RecordBatch) {
		if p.base == 0 && (h.NumRecords != 1 || h.MaxTimestamp != appended || h.Attributes != attrLogAppendTime) {
			t.Errorf("rebuilt batch: %d records, max ts t0%+dms, attributes %#x; want 1, t0+5h, LogAppendTime",
				h.NumRecords, h.MaxTimestamp-t0, h.Attributes)
		}
	})
	if off, ts, err := l.OffsetForTime(appended); err != nil || off != 0 || ts != appended {
		t.Errorf("OffsetForTime(t0+5h) = %d, t0%+dms, %v; want 0, t0+5h", off, ts-t0, err)
	}
}
