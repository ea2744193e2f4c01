package storage

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// rewrittenBytes is the size of the offsets log o would rewrite: one
// commit record per group.
func rewrittenBytes(o *OffsetStore) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for name, g := range o.groups {
		n += int64(len(encodeCommit(nil, name, g.at, o.all(name))))
	}
	return n
}

// rewriteNow rewrites the offsets log and returns the rewrite's error.
func rewriteNow(o *OffsetStore) error {
	o.mu.Lock()
	o.startRewrite()
	o.mu.Unlock()
	o.rewrites.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rewriteErr
}

// TestOffsetStoreRewriteThreshold: the offsets log is rewritten once it
// reaches twice what its rewrite would write (or offsetsMinFile), so it
// never holds more than that plus the last record — also when the
// check that found the live offsets more than half the file was a
// while ago. The store keeps the rewritten size exactly (live).
func TestOffsetStoreRewriteThreshold(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	cfg.MaxOffsetMetadata = 8000
	s := mustOpen(t, cfg)
	o := s.Offsets()
	meta := strings.Repeat("m", 7000)
	commit := func(from, to int) int64 {
		t.Helper()
		var offs []GroupOffset
		for p := from; p < to; p++ {
			offs = append(offs, GroupOffset{"t", int32(p), clk.ms(), meta})
		}
		if err := o.Commit("g", offs); err != nil {
			t.Fatal(err)
		}
		return int64(len(encodeCommit(nil, "g", clk.ms(), offs)))
	}
	commit(0, 100) // ~700 KB live
	rewrites := 0
	prev := int64(0)
	for i := range 40 {
		clk.add(1)
		last := commit(0, 50-40*min(i, 1)) // half of them, then ten at a time
		o.rewrites.Wait()                  // the rewrite runs in the background
		live := rewrittenBytes(o)
		o.mu.Lock()
		size, accounted := o.size, o.live
		o.mu.Unlock()
		if accounted != live {
			t.Fatalf("commit %d: live accounted at %d bytes, a rewrite writes %d", i, accounted, live)
		}
		if limit := max(offsetsMinFile, 2*live) + last; size > limit {
			t.Fatalf("commit %d: the offsets log is %d bytes, %.1f× the %d live (limit %d)", i, size, float64(size)/float64(live), live, limit)
		}
		if size < prev {
			rewrites++
		}
		prev = size
	}
	if rewrites == 0 {
		t.Fatal("the offsets log was never rewritten")
	}
	want := o.All("g")
	s.Close()
	s = mustOpen(t, cfg)
	defer s.Close()
	if got := s.Offsets().All("g"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("the offsets read back differ from those committed")
	}
}

// readSizeFS records the largest read of the offsets log.
type readSizeFS struct {
	vfs.FS
	mu      sync.Mutex
	largest int
}

func (r *readSizeFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := r.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != offsetsFile {
		return f, err
	}
	return &readSizeFile{File: f, fs: r}, nil
}

type readSizeFile struct {
	vfs.File
	fs *readSizeFS
}

func (f *readSizeFile) ReadAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.largest = max(f.fs.largest, len(b))
	f.fs.mu.Unlock()
	return f.File.ReadAt(b, off)
}

// TestOffsetStoreOpenStreams: Open replays the offsets log record by
// record through a bounded buffer, not by reading the whole file into
// memory: startup memory follows the live offsets, not the file.
func TestOffsetStoreOpenStreams(t *testing.T) {
	clk := newClock()
	cfg := testConfig(t, clk)
	dir := filepath.Join(cfg.Dir, offsetsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// 4 MiB of commits of one partition: one offset live.
	var b []byte
	meta := strings.Repeat("m", 4000)
	for i := 0; len(b) < 4<<20; i++ {
		b = encodeCommit(b, "g", clk.ms(), []GroupOffset{{"t", 0, int64(i), meta}})
	}
	b = append(b, 0, 0, 1) // a torn tail
	if err := os.WriteFile(filepath.Join(dir, offsetsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rfs := &readSizeFS{FS: vfs.OS}
	cfg.FS = rfs
	s := mustOpen(t, cfg)
	defer s.Close()
	if off, _, ok := s.Offsets().Fetch("g", "t", 0); !ok || off <= 0 {
		t.Fatalf("the last commit not replayed: %d %v", off, ok)
	}
	if rfs.largest > offsetsReadBuffer {
		t.Fatalf("Open read %d bytes of the %d-byte offsets log at once, more than %d", rfs.largest, len(b), offsetsReadBuffer)
	}
}
