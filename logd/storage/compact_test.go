package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// compactLog fills a compacted partition: 400 batches of 1..5 records
// over 20 keys in every codec, every 7th record a tombstone, a minute
// apart. It returns what was written, by offset.
func compactLog(t *testing.T, cfg Config, clk *testClock) (*Store, *Log, []decoded) {
	s := mustOpen(t, cfg)
	if err := s.CreateTopic("c", 1, TopicConfig{Cleanup: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	l, _ := s.Partition("c", 0)
	var all []decoded
	n := 0
	for i := range 400 {
		spec := batchSpec{ts: clk.ms(), pid: -1, epoch: -1, firstSeq: -1, codec: i % 5}
		for j := range 1 + i%5 {
			r := rec{key: fmt.Appendf(nil, "key-%d", n%20), value: fmt.Appendf(nil, "value-%d", n), tsDelta: int64(j)}
			if n%7 == 0 {
				r.value = nil
			}
			n++
			spec.recs = append(spec.recs, r)
		}
		res := appendDurable(t, l, makeBatch(t, spec))
		for j, r := range spec.recs {
			all = append(all, decoded{res.BaseOffset + int64(j), spec.ts + r.tsDelta, string(r.key), r.value})
		}
		clk.add(time.Minute)
	}
	return s, l, all
}

// expectCompacted computes what compaction must keep: in the sealed
// part (offsets below sealedEnd) the latest record of each key there,
// tombstones only if younger than tombCut; the active part unchanged.
func expectCompacted(all []decoded, sealedEnd, tombCut int64) []decoded {
	latest := map[string]int64{}
	for _, r := range all {
		if r.offset < sealedEnd {
			latest[r.key] = r.offset
		}
	}
	var want []decoded
	for _, r := range all {
		if r.offset < sealedEnd && (latest[r.key] != r.offset || r.value == nil && r.ts < tombCut) {
			continue
		}
		want = append(want, r)
	}
	return want
}

type compactions struct{ n int }

func (h *compactions) OnCompact(string, int32, CompactStats) { h.n++ }

func TestCompaction(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	h := &compactions{}
	cfg.Hooks = []Hook{h}
	cfg.DeleteRetention = 24 * time.Hour
	s, l, all := compactLog(t, cfg, clk)
	sizeBefore := l.Size()
	l.mu.Lock()
	sealedEnd := l.segs[len(l.segs)-1].base
	l.mu.Unlock()
	if sealedEnd == 0 {
		t.Fatal("no sealed segment")
	}

	st, err := l.Compact(clk.now())
	if err != nil {
		t.Fatal(err)
	}
	want := expectCompacted(all, sealedEnd, clk.ms()-cfg.DeleteRetention.Milliseconds())
	checkCompacted(t, l, want)
	if st.Rewritten == 0 || st.Dropped == 0 || st.TombstonesDropped != 0 || l.Size() >= sizeBefore || h.n != 1 {
		t.Fatalf("stats %+v, size %d → %d, hook %d", st, sizeBefore, l.Size(), h.n)
	}
	// Nothing new: the next pass is skipped.
	if st, _ := l.Compact(clk.now()); st.Segments != 0 {
		t.Fatalf("idle pass examined %d segments", st.Segments)
	}

	// Past DeleteRetention the tombstones go too.
	clk.add(cfg.DeleteRetention)
	st, err = l.Compact(clk.now())
	if err != nil {
		t.Fatal(err)
	}
	want = expectCompacted(all, sealedEnd, clk.ms()-cfg.DeleteRetention.Milliseconds())
	checkCompacted(t, l, want)
	if st.TombstonesDropped == 0 {
		t.Fatalf("no tombstone dropped: %+v", st)
	}

	// The compacted log survives a clean reopen and a crash, and takes
	// appends.
	s.Close()
	s = mustOpen(t, cfg)
	l, _ = s.Partition("c", 0)
	checkCompacted(t, l, want)
	appendDurable(t, l, simpleBatch(t, "after", 2, clk.ms()))
	crash(s)
	s = mustOpen(t, cfg)
	defer s.Close()
	l, _ = s.Partition("c", 0)
	got := readAll(t, l, 0)
	checkRecords(t, got[:len(want)], want)
	if len(got) != len(want)+2 {
		t.Fatalf("%d records after the append, want %d", len(got), len(want)+2)
	}
}

// checkCompacted checks the records; that every batch is valid, holds
// records (compaction drops the batches it empties), and starts after
// the one before; and that Read at any offset gives the batch that
// holds it or, when compaction removed it, the next one.
func checkCompacted(t *testing.T, l *Log, want []decoded) {
	t.Helper()
	checkRecords(t, readAll(t, l, 0), want)
	next := l.StartOffset()
	walkBatches(t, l, func(p peek, h *kmsg.RecordBatch) {
		if p.base < next || h.NumRecords == 0 {
			t.Fatalf("batch after %d: base %d, %d records", next, p.base, h.NumRecords)
		}
		next = p.last() + 1
	})
	for off := l.StartOffset(); off < l.EndOffset(); off++ {
		b, err := l.Read(off, 1)
		p, _ := peekBatch(b)
		if err != nil || len(b) == 0 || p.last() < off {
			t.Fatalf("Read(%d): batch %d..%d, %v", off, p.base, p.last(), err)
		}
		for _, r := range want {
			if r.offset >= off && r.offset < p.base {
				t.Fatalf("Read(%d) skipped to the batch at %d past record %d", off, p.base, r.offset)
			}
		}
	}
}

func TestCompactionCrashSafety(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	s, l, all := compactLog(t, cfg, clk)
	l.mu.Lock()
	sealedEnd := l.segs[len(l.segs)-1].base
	l.mu.Unlock()
	dir := l.dir
	first := filepath.Join(dir, segmentName(0))
	old, _ := os.ReadFile(first + logSuffix)
	if _, err := l.Compact(clk.now()); err != nil {
		t.Fatal(err)
	}
	compacted, _ := os.ReadFile(first + logSuffix)
	s.Close()
	if len(compacted) >= len(old) {
		t.Fatal("first segment not compacted")
	}
	wantNew := expectCompacted(all, sealedEnd, clk.ms()-DefaultDeleteRetention.Milliseconds())
	// The other segments are compacted already; put the first back as
	// it was before, with the compaction's output beside it at each
	// stage of the swap.
	wantOld := append([]decoded(nil), wantNew...)
	oldRecs := decodeBatches(t, old)
	var firstEnd int64
	for _, r := range oldRecs {
		firstEnd = r.offset + 1
	}
	rest := wantOld[:0]
	for _, r := range wantNew {
		if r.offset >= firstEnd {
			rest = append(rest, r)
		}
	}
	wantOld = append(oldRecs, rest...)
	for _, c := range []struct {
		stage string
		files map[string][]byte
		want  []decoded
	}{
		{"writing", map[string][]byte{cleanedInfix + logSuffix: compacted[:len(compacted)/2]}, wantOld},
		{"written", map[string][]byte{cleanedInfix + logSuffix: compacted, cleanedInfix + indexSuffix: nil}, wantOld},
		{"indexes renamed", map[string][]byte{cleanedInfix + logSuffix: compacted, swapInfix + indexSuffix: nil, swapInfix + timeIndexSuffix: nil}, wantOld},
		{"committed", map[string][]byte{swapInfix + logSuffix: compacted, swapInfix + timeIndexSuffix: []byte("junk")}, wantNew},
	} {
		os.WriteFile(first+logSuffix, old, 0o644)
		os.Remove(first + indexSuffix)
		os.Remove(first + timeIndexSuffix)
		for suffix, b := range c.files {
			os.WriteFile(first+suffix, b, 0o644)
		}
		s := mustOpen(t, cfg)
		l, _ := s.Partition("c", 0)
		checkCompacted(t, l, c.want)
		s.Close()
		names, _ := readDirNames(vfs.OS, dir)
		for _, n := range names {
			if filepath.Ext(n[:len(n)-len(filepath.Ext(n))]) != "" {
				t.Errorf("%s: %s left behind", c.stage, n)
			}
		}
	}
}

// TestCompactionKeepsUnreadableBatch: a stored batch whose frame and
// CRC are good but whose records cannot be read (stored before appends
// checked records) is kept as it is, counted, and the pass goes on: it
// once failed every compaction pass of its partition, forever.
// Dropping it would lose whatever a reader can make of it; keeping it
// unmapped only keeps more.
func TestCompactionKeepsUnreadableBatch(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, testConfig(t, clk))
	defer s.Close()
	if err := s.CreateTopic("c", 1, TopicConfig{Cleanup: CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	l, _ := s.Partition("c", 0)
	appendDurable(t, l, makeBatch(t, batchSpec{ts: clk.ms(), pid: -1, epoch: -1, firstSeq: -1, codec: codecGzip,
		recs: []rec{{key: []byte("a"), value: []byte("old")}}}))
	// Its records become bytes gzip cannot read, its CRC made good.
	f := l.segs[0].log
	b := make([]byte, l.segs[0].size)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	copy(b[batchHeaderLen:], bytes.Repeat([]byte{'x'}, len(b)-batchHeaderLen))
	binary.BigEndian.PutUint32(b[batchCRCPos:], crc32Castagnoli(b[batchCRCStart:]))
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		for i := range 100 {
			spec := batchSpec{ts: clk.ms(), pid: -1, epoch: -1, firstSeq: -1}
			for j := range 4 {
				spec.recs = append(spec.recs, rec{key: fmt.Appendf(nil, "k%d", j), value: bytes.Repeat([]byte{byte(i)}, 100)})
			}
			appendDurable(t, l, makeBatch(t, spec))
		}
		st, err := l.Compact(clk.t)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if st.Unreadable != 1 || st.Rewritten == 0 {
			t.Errorf("pass %d: %+v, want 1 unreadable batch and segments rewritten", pass, st)
		}
	}
	got, err := l.Read(0, 1)
	if err != nil || !bytes.Equal(got, b) {
		t.Errorf("the unreadable batch: read %d bytes, %v; want it as it was", len(got), err)
	}
}
