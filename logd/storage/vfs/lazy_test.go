package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
)

func mustWrite(t *testing.T, fsys FS, name string, flag int, off int64, data string) File {
	t.Helper()
	f, err := fsys.OpenFile(name, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), off); err != nil {
		t.Fatal(err)
	}
	return f
}

func read(t *testing.T, fsys FS, name string) string {
	t.Helper()
	b, err := ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func exists(fsys FS, name string) bool {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err == nil {
		f.Close()
	}
	return err == nil
}

// TestLazyCrashKeepsOnlySynced: file data survives a crash only up to
// its last Sync, a directory entry only after SyncDir of its directory.
func TestLazyCrashKeepsOnlySynced(t *testing.T) {
	l := NewLazy()
	if err := l.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	a := mustWrite(t, l, "/d/a", os.O_RDWR|os.O_CREATE, 0, "synced")
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("+lost"), 6); err != nil {
		t.Fatal(err)
	}
	b := mustWrite(t, l, "/d/b", os.O_RDWR|os.O_CREATE, 0, "data synced, entry not")
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, l, "/d/a"); got != "synced+lost" {
		t.Fatalf("before the crash /d/a reads %q", got)
	}
	if err := l.SyncDir("/d"); err != nil { // makes /d/a and /d/b durable
		t.Fatal(err)
	}
	c := mustWrite(t, l, "/d/c", os.O_RDWR|os.O_CREATE, 0, "never synced")
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Rename("/d/b", "/d/b2"); err != nil { // not made durable
		t.Fatal(err)
	}
	unsynced := l.Unsynced()
	if unsynced != int64(len("+lost")) {
		t.Fatalf("Unsynced %d, want %d", unsynced, len("+lost"))
	}

	r := l.Crash()
	if _, err := a.WriteAt([]byte("x"), 0); !errors.Is(err, ErrCrashed) {
		t.Fatalf("a file of the crashed view: %v, want ErrCrashed", err)
	}
	if _, err := l.ReadDir("/d"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("the crashed view: %v, want ErrCrashed", err)
	}
	if got := read(t, r, "/d/a"); got != "synced" {
		t.Fatalf("after the crash /d/a reads %q, want the synced part", got)
	}
	if got := read(t, r, "/d/b"); got != "data synced, entry not" {
		t.Fatalf("after the crash /d/b reads %q", got)
	}
	if exists(r, "/d/b2") || exists(r, "/d/c") {
		t.Fatal("an entry not made durable by SyncDir survived the crash")
	}
}

// TestLazyKillKeepsTheCache: a killed process loses nothing, but its
// files are dead; what it left unsynced is lost at a later power loss.
func TestLazyKillKeepsTheCache(t *testing.T) {
	l := NewLazy()
	f := mustWrite(t, l, "/f", os.O_RDWR|os.O_CREATE, 0, "unsynced")
	k := l.Kill()
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, ErrCrashed) {
		t.Fatalf("a file of the killed process: %v, want ErrCrashed", err)
	}
	if got := read(t, k, "/f"); got != "unsynced" {
		t.Fatalf("after a kill /f reads %q", got)
	}
	if exists(k.Crash(), "/f") {
		t.Fatal("a file never synced survived a power loss after the kill")
	}
}

// TestLazyUnsyncedDirectoryLost: a directory created and never synced
// into its parent disappears with everything in it.
func TestLazyUnsyncedDirectoryLost(t *testing.T) {
	l := NewLazy()
	if err := l.MkdirAll("/x/y", 0o755); err != nil {
		t.Fatal(err)
	}
	f := mustWrite(t, l, "/x/y/f", os.O_RDWR|os.O_CREATE, 0, "v")
	f.Sync()
	if err := l.SyncDir("/x/y"); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncDir("/x"); err != nil {
		t.Fatal(err)
	}
	r := l.Crash()
	if _, err := r.ReadDir("/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("/x survived without a sync of /: %v", err)
	}
	if exists(r, "/x/y/f") {
		t.Fatal("a file in a lost directory survived")
	}
}

// TestLazyTornKeepsAPrefix: a torn crash keeps, per file, a prefix of
// the unsynced writes in order, the last possibly cut short; never a
// later write without the earlier ones.
func TestLazyTornKeepsAPrefix(t *testing.T) {
	sawNone, sawSome, sawAll := false, false, false
	for seed := range uint64(64) {
		l := NewLazyTorn(rand.New(rand.NewPCG(seed, 1)))
		f := mustWrite(t, l, "/f", os.O_RDWR|os.O_CREATE, 0, "base")
		f.Sync()
		l.SyncDir("/")
		want := "base"
		for i := range 8 {
			s := string(rune('a'+i)) + string(rune('a'+i))
			if _, err := f.WriteAt([]byte(s), int64(len(want))); err != nil {
				t.Fatal(err)
			}
			want += s
		}
		got := read(t, l.Crash(), "/f")
		if !bytes.HasPrefix([]byte(want), []byte(got)) || len(got) < 4 {
			t.Fatalf("seed %d: %q is not a prefix of %q that keeps the synced part", seed, got, want)
		}
		sawNone = sawNone || got == "base"
		sawAll = sawAll || got == want
		sawSome = sawSome || len(got) > 4 && len(got) < len(want)
	}
	if !sawNone || !sawSome || !sawAll {
		t.Fatalf("torn crashes kept none %v, some %v, all %v: want each at least once", sawNone, sawSome, sawAll)
	}
}

// TestLazyTruncateAndRename: truncations are unsynced changes too, and a
// renamed file keeps its data under the new name once the directory is
// synced.
func TestLazyTruncateAndRename(t *testing.T) {
	l := NewLazy()
	f := mustWrite(t, l, "/f.tmp", os.O_RDWR|os.O_CREATE, 0, "0123456789")
	f.Sync()
	if err := l.Rename("/f.tmp", "/f"); err != nil {
		t.Fatal(err)
	}
	l.SyncDir("/")
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if got := read(t, l, "/f"); got != "012" {
		t.Fatalf("truncated file reads %q", got)
	}
	if got := read(t, l.Crash(), "/f"); got != "0123456789" {
		t.Fatalf("an unsynced truncation survived the crash: %q", got)
	}
}

// TestFaultsFailWhatTheRulePicks: a rule fails writes with ENOSPC (half
// the bytes written first) until it is cleared.
func TestFaultsFailWhatTheRulePicks(t *testing.T) {
	fsys := NewFaults(NewLazy())
	f, err := fsys.OpenFile("/f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fsys.SetRule(func(op Op, _ string) error {
		if op == OpWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	n, err := f.WriteAt([]byte("abcd"), 0)
	if !errors.Is(err, syscall.ENOSPC) || n != 2 {
		t.Fatalf("write under the rule: %d, %v; want 2, ENOSPC", n, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync is not picked by the rule: %v", err)
	}
	fsys.SetRule(nil)
	if _, err := f.WriteAt([]byte("abcd"), 0); err != nil {
		t.Fatal(err)
	}
	if fsys.Failed() != 1 {
		t.Fatalf("Failed %d, want 1", fsys.Failed())
	}
}

// TestOSFS: the real file system through the interface.
func TestOSFS(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(OS, dir+"/a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := OS.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if got := read(t, OS, dir+"/a"); got != "hello" {
		t.Fatalf("read %q", got)
	}
	ents, err := OS.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "a" {
		t.Fatalf("ReadDir: %v %v", ents, err)
	}
}
