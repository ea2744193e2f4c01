package storage

import (
	"io/fs"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// heldSyncFS holds every file sync, once armed, until the test releases
// it, and records that one started.
type heldSyncFS struct {
	vfs.FS
	armed   atomic.Bool
	entered atomic.Bool
	release chan struct{}
}

func (h *heldSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return heldSyncFile{f, h}, nil
}

type heldSyncFile struct {
	vfs.File
	fs *heldSyncFS
}

func (f heldSyncFile) Sync() error {
	if f.fs.armed.Load() {
		f.fs.entered.Store(true)
		<-f.fs.release
	}
	return f.File.Sync()
}

// TestAppendStartsIdleGroupCommit: an Append that wakes the idle group
// commit lets it start its fdatasync before Append returns. A server's
// connection reader goes straight on to read and append the next
// request; had the woken group commit to wait, runnable, until the
// reader blocked (with every P busy, as one P is here), the disk would
// sit idle with appended data to sync.
func TestAppendStartsIdleGroupCommit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	clk := newClock()
	fsys := &heldSyncFS{FS: vfs.OS, release: make(chan struct{})}
	cfg := testConfig(t, clk)
	cfg.FS = fsys
	s, l := openPartition(t, cfg)
	defer s.Close()
	defer fsys.armed.Store(false)
	idle := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !l.syncIdle.Load(); runtime.Gosched() {
			if time.Now().After(deadline) {
				t.Fatal("the group commit never waits for a kick")
			}
		}
	}
	fsys.armed.Store(true)
	for i := range 3 {
		idle()
		fsys.entered.Store(false)
		res, err := l.Append(simpleBatch(t, "a", 2, clk.ms()))
		if err != nil {
			t.Fatal(err)
		}
		if !fsys.entered.Load() {
			t.Fatalf("append %d returned before the group commit it woke started its fdatasync", i)
		}
		fsys.release <- struct{}{}
		if err := l.WaitDurable(t.Context(), res.LastOffset); err != nil {
			t.Fatal(err)
		}
	}
}
