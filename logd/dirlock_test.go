package logd

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/brokerless/brokerless/logd/storage"
	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// TestOneServerPerDir: a second Server on a directory in use fails with a
// *DirLockedError naming the directory and the holder's pid; once the
// first closes, the directory can be opened again.
func TestOneServerPerDir(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir)
	_, err := New(Config{Storage: storage.Config{Dir: dir}})
	var locked *DirLockedError
	if !errors.As(err, &locked) || !errors.Is(err, ErrDirLocked) {
		t.Fatalf("second server on %s: %v, want a DirLockedError", dir, err)
	}
	if locked.Dir != dir || locked.PID != os.Getpid() {
		t.Fatalf("%+v, want dir %s pid %d", locked, dir, os.Getpid())
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("message %q names neither the directory nor the pid", msg)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Storage: storage.Config{Dir: dir}})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	srv.Close()
}

// TestDirLockAcrossProcesses: a logd in another process holds the
// directory (and its pid is reported); once it is killed, the directory
// is free.
func TestDirLockAcrossProcesses(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	child := startChild(t, dir, addr)
	_, err := New(Config{Storage: storage.Config{Dir: dir}})
	var locked *DirLockedError
	if !errors.As(err, &locked) || locked.PID != child.Process.Pid {
		t.Fatalf("server beside a child logd (pid %d): %v", child.Process.Pid, err)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	srv, err := New(Config{Storage: storage.Config{Dir: dir}})
	if err != nil {
		t.Fatalf("after the child was killed: %v", err)
	}
	srv.Close()
}

// TestNewDataDirDurable: a data directory New creates, with its missing
// parents, is synced into the directory above each, as the store does
// for the directories it makes: otherwise a power loss could take the
// whole directory, acknowledged records and all. (Locking the directory
// creates it before the store opens.)
func TestNewDataDirDurable(t *testing.T) {
	top := t.TempDir()
	parent := filepath.Join(top, "a")
	dir := filepath.Join(parent, "data")
	fsys := &countingFS{FS: vfs.OS}
	srv, err := New(Config{Storage: storage.Config{Dir: dir, FS: fsys}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, d := range []string{top, parent} {
		if !fsys.dirSynced(d) {
			t.Errorf("%s was not synced after a directory was made in it", d)
		}
	}
}
