package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// writeBehindFS records the ranges of segment files whose write-out was
// started.
type writeBehindFS struct {
	vfs.FS
	mu     sync.Mutex
	ranges [][2]int64
}

func (w *writeBehindFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := w.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return writeBehindFile{f, w}, nil
}

type writeBehindFile struct {
	vfs.File
	fs *writeBehindFS
}

func (f writeBehindFile) WriteBehind(off, n int64) {
	f.fs.mu.Lock()
	f.fs.ranges = append(f.fs.ranges, [2]int64{off, n})
	f.fs.mu.Unlock()
}

// bigBatch is one record of a size-byte value.
func bigBatch(t testing.TB, size int, ts int64) []byte {
	return makeBatch(t, batchSpec{ts: ts, pid: -1, epoch: -1, firstSeq: -1, recs: []rec{{value: make([]byte, size)}}})
}

// TestAppendStartsWriteOut: under FsyncAlways, once writeBehindBytes
// have been appended since the last write-out started, the whole pages
// among them are handed to the disk at once (sync_file_range), so the
// group commit's fdatasync finds them written or on their way; the page
// still being filled is left for later. Under the other policies, where
// no one waits for the disk, nothing is.
func TestAppendStartsWriteOut(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncInterval, FsyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			clk := newClock()
			fsys := &writeBehindFS{FS: vfs.OS}
			cfg := testConfig(t, clk)
			cfg.FS, cfg.Fsync, cfg.SegmentBytes = fsys, policy, 64<<20
			s, l := openPartition(t, cfg)
			defer s.Close()
			var want [][2]int64
			var end, behind int64
			// Small batches first (no write-out until they add up),
			// then large ones (one each).
			for _, size := range []int{40 << 10, 40 << 10, 40 << 10, 40 << 10, 40 << 10, 40 << 10, 40 << 10, 300 << 10, 900 << 10, 10} {
				b := bigBatch(t, size, clk.ms())
				if _, err := l.Append(b); err != nil {
					t.Fatal(err)
				}
				end += int64(len(b))
				if to := end &^ (writeBehindPage - 1); to-behind >= writeBehindBytes {
					want = append(want, [2]int64{behind, to - behind})
					behind = to
				}
			}
			if len(want) != 3 {
				t.Fatalf("the test expects 3 write-outs, not %v", want)
			}
			if policy != FsyncAlways {
				want = nil
			}
			fsys.mu.Lock()
			got := fsys.ranges
			fsys.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Fatalf("write-out started for %v, want %v", got, want)
			}
		})
	}
}

// TestOSFileWritesBehind: the operating system's files take the hint.
func TestOSFileWritesBehind(t *testing.T) {
	f, err := vfs.OS.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wb, ok := f.(vfs.WriteBehinder)
	if !ok {
		t.Fatalf("%T does not start write-outs", f)
	}
	if _, err := f.WriteAt([]byte("data"), 0); err != nil {
		t.Fatal(err)
	}
	wb.WriteBehind(0, 4)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
