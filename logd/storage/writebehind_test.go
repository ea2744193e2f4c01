package storage

import (
	"io/fs"
	"os"
	"path/filepath"
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

// TestAppendStartsWriteOut: under FsyncAlways each appended batch's
// bytes are handed to the disk at once (sync_file_range), so the group
// commit's fdatasync finds them written or on their way; under the
// other policies, where no one waits for the disk, they are not.
func TestAppendStartsWriteOut(t *testing.T) {
	for _, policy := range []FsyncPolicy{FsyncAlways, FsyncInterval, FsyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			clk := newClock()
			fsys := &writeBehindFS{FS: vfs.OS}
			cfg := testConfig(t, clk)
			cfg.FS, cfg.Fsync = fsys, policy
			s, l := openPartition(t, cfg)
			defer s.Close()
			var want [][2]int64
			var pos int64
			for range 3 {
				b := simpleBatch(t, "a", 2, clk.ms())
				if _, err := l.Append(b); err != nil {
					t.Fatal(err)
				}
				want = append(want, [2]int64{pos, int64(len(b))})
				pos += int64(len(b))
			}
			fsys.mu.Lock()
			got := fsys.ranges
			fsys.mu.Unlock()
			if policy != FsyncAlways {
				want = nil
			}
			if len(got) != len(want) {
				t.Fatalf("write-out started for %v, want %v", got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("write-out started for %v, want %v", got, want)
				}
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
