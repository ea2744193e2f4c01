package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brokerless/brokerless/logd/storage/vfs"
)

// gateFS holds the first Sync of the offsets log's rewrite
// (offsets.log.tmp) until release is closed, after closing entered.
type gateFS struct {
	vfs.FS
	entered, release chan struct{}
	held             bool
}

func newGateFS(fsys vfs.FS) *gateFS {
	return &gateFS{FS: fsys, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != offsetsFile+tmpSuffix {
		return f, err
	}
	return &gateFile{File: f, g: g}, nil
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f *gateFile) Sync() error {
	if !f.g.held { // only the rewrite's goroutine syncs this file
		f.g.held = true
		close(f.g.entered)
		<-f.g.release
	}
	return f.File.Sync()
}

// copyOffsetsDir copies the offsets' directory of dir as it is now, as
// a kill would leave it, to a new directory, and returns it.
func copyOffsetsDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	from := filepath.Join(dir, offsetsDir)
	os.MkdirAll(filepath.Join(to, offsetsDir), 0o755)
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(to, offsetsDir, e.Name()), b, 0o644)
	}
	return to
}

// bgRewriteStore opens an offset store on fsys in dir with 2,000
// partitions of group a committed, and starts a rewrite of its log,
// which gateFS holds.
func bgRewriteStore(t *testing.T, dir string, fsys vfs.FS, clk *testClock) *OffsetStore {
	t.Helper()
	o, err := openOffsetStore(offsetsConfig{fsys, dir, 100, 100, 1 << 30, -1, clk.now, newTestLogger(), nil})
	if err != nil {
		t.Fatal(err)
	}
	var offs []GroupOffset
	for p := range 2000 {
		offs = append(offs, GroupOffset{"t", int32(p), 1, "m"})
	}
	for range 3 {
		if err := o.Commit("a", offs); err != nil {
			t.Fatal(err)
		}
	}
	o.mu.Lock()
	o.startRewrite()
	o.mu.Unlock()
	return o
}

// checkOffsets opens the offsets in dir and checks they hold want
// (group → offset of partition 7 of topic t) and a's 2,000 partitions.
func checkOffsets(t *testing.T, dir string, clk *testClock, want map[string]int64) {
	t.Helper()
	o, err := openOffsetStore(offsetsConfig{vfs.OS, dir, 100, 100, 1 << 30, -1, clk.now, newTestLogger(), nil})
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if n := len(o.All("a")); n != 2000 {
		t.Fatalf("group a has %d partitions, want 2000", n)
	}
	for g, off := range want {
		if got, _, ok := o.Fetch(g, "t", 7); !ok || got != off {
			t.Fatalf("%s t/7 = %d %v, want %d: an acknowledged commit was lost", g, got, ok, off)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, offsetsDir, offsetsFile+tmpSuffix)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the rewrite's file is left after Open: %v", err)
	}
}

// TestOffsetStoreRewriteInBackground: commits go on while the offsets
// log is rewritten, without waiting for it; those made meanwhile are in
// the new file; a kill in the middle of the rewrite loses none.
func TestOffsetStoreRewriteInBackground(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	gate := newGateFS(vfs.OS)
	o := bgRewriteStore(t, dir, gate, clk)
	defer o.close()
	<-gate.entered // the rewrite is fsyncing its file
	want := map[string]int64{"a": 1}
	done := make(chan error, 1)
	go func() {
		for i := range 10 {
			g := fmt.Sprint("g", i)
			if err := o.Commit(g, []GroupOffset{{"t", 7, int64(100 + i), ""}}); err != nil {
				done <- err
				return
			}
		}
		done <- o.Commit("a", []GroupOffset{{"t", 7, 99, ""}})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second): // a deadlock detector, not a speed bound
		close(gate.release)
		t.Fatal("commits waited for the rewrite of the offsets log")
	}
	for i := range 10 {
		want[fmt.Sprint("g", i)] = int64(100 + i)
	}
	want["a"] = 99
	// Killed in the middle of the rewrite: the old file has them all.
	checkOffsets(t, copyOffsetsDir(t, dir), clk, want)
	close(gate.release)
	o.rewrites.Wait()
	o.mu.Lock()
	err, size, live := o.rewriteErr, o.size, o.live
	o.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if size > live+4<<10 {
		t.Fatalf("the rewritten log is %d bytes, %d live", size, live)
	}
	if err := o.Commit("g0", []GroupOffset{{"t", 7, 200, ""}}); err != nil {
		t.Fatal(err)
	}
	want["g0"] = 200
	checkOffsets(t, copyOffsetsDir(t, dir), clk, want)
}

// TestOffsetStoreRewriteFaults: the steps of a background rewrite that
// run once it has written its copy — appending the commits made
// meanwhile, fsync, rename, directory sync — fail one at a time; no
// acknowledged commit is lost, and after a failed directory sync no
// commit is acknowledged until the directory is synced.
func TestOffsetStoreRewriteFaults(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpSyncDir} {
		t.Run(string(op), func(t *testing.T) {
			clk := newClock()
			dir := t.TempDir()
			faults := vfs.NewFaults(vfs.OS)
			gate := newGateFS(faults)
			o := bgRewriteStore(t, dir, gate, clk)
			defer o.close()
			<-gate.entered
			if err := o.Commit("b", []GroupOffset{{"t", 7, 5, ""}}); err != nil {
				t.Fatal(err)
			}
			odir := filepath.Join(dir, offsetsDir)
			faults.SetRule(func(o vfs.Op, name string) error {
				switch {
				case o != op:
				case op == vfs.OpSyncDir && name == odir,
					op == vfs.OpRename && name == filepath.Join(odir, offsetsFile),
					filepath.Base(name) == offsetsFile+tmpSuffix:
					return errors.New("injected")
				}
				return nil
			})
			close(gate.release)
			o.rewrites.Wait()
			o.mu.Lock()
			err := o.rewriteErr
			o.mu.Unlock()
			if err == nil || faults.Failed() == 0 {
				t.Fatalf("the rewrite did not fail: %v", err)
			}
			want := map[string]int64{"a": 1, "b": 5}
			checkOffsets(t, copyOffsetsDir(t, dir), clk, want)
			err = o.Commit("c", []GroupOffset{{"t", 7, 6, ""}})
			if op == vfs.OpSyncDir && err == nil {
				t.Fatal("a commit was acknowledged while the rewritten log's rename was not durable")
			}
			faults.SetRule(nil)
			if err := o.Commit("c", []GroupOffset{{"t", 7, 7, ""}}); err != nil {
				t.Fatal(err)
			}
			want["c"] = 7
			checkOffsets(t, copyOffsetsDir(t, dir), clk, want)
		})
	}
}

// TestOffsetStoreRewriteOvertaken: what is written during a rewrite is
// kept for it only up to the copy's size (or offsetsMinFile); past that
// the rewrite is overtaken, keeps nothing more, and leaves the old file,
// which holds every acknowledged commit, in use.
func TestOffsetStoreRewriteOvertaken(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	gate := newGateFS(vfs.OS)
	o := bgRewriteStore(t, dir, gate, clk)
	defer o.close()
	release := sync.OnceFunc(func() { close(gate.release) })
	defer release() // before close, which waits for the rewrite
	<-gate.entered  // the rewrite is fsyncing its copy
	var offs []GroupOffset
	for p := range 10000 {
		offs = append(offs, GroupOffset{"t", int32(p), 1, ""})
	}
	size := func() int64 {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.size
	}
	want := map[string]int64{"a": 1}
	var written int64
	for i := range 8 {
		g := fmt.Sprint("b", i)
		offs[7].Offset = int64(100 + i)
		before := size()
		if err := o.Commit(g, offs); err != nil {
			t.Fatal(err)
		}
		written += size() - before
		want[g] = int64(100 + i)
		o.mu.Lock()
		held, most := int64(len(o.pending)), o.pendingMax
		o.mu.Unlock()
		if held > most {
			t.Fatalf("after %d bytes of commits the rewrite holds %d bytes of them, at most %d", written, held, most)
		}
	}
	if o.pendingMax >= written {
		t.Fatalf("the test wrote %d bytes during the rewrite, not past its bound %d", written, o.pendingMax)
	}
	release()
	o.rewrites.Wait()
	o.mu.Lock()
	err := o.rewriteErr
	o.mu.Unlock()
	if !errors.Is(err, errRewriteOvertaken) {
		t.Fatalf("the rewrite ended with %v, want %v", err, errRewriteOvertaken)
	}
	checkOffsets(t, copyOffsetsDir(t, dir), clk, want)
	if err := o.Commit("c", []GroupOffset{{"t", 7, 7, ""}}); err != nil {
		t.Fatal(err)
	}
	want["c"] = 7
	checkOffsets(t, copyOffsetsDir(t, dir), clk, want)
}
