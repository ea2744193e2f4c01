package vfs

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrCrashed is returned by every operation of a Lazy view, and of a
// file opened through it, after Crash: the process that used it is
// gone.
var ErrCrashed = errors.New("vfs: the simulated machine lost power")

// Lazy is an in-memory file system that models a disk under a page
// cache. Writes, truncations and directory changes are seen at once by
// every reader (the cache), but only File.Sync makes a file's data
// durable and only SyncDir makes the entries of a directory (creations,
// renames, removals) durable. Crash is a power loss: what was not made
// durable is gone.
//
// By default a crash drops every unsynced write, as LazyFS does. Made
// with NewLazyTorn, a crash instead keeps a random prefix of each file's
// unsynced writes in the order they were made, the last one possibly
// cut short: a page cache that had written back part of its dirty data.
// Directory entries are only ever durable after SyncDir.
//
// All methods are safe for concurrent use; each operation is atomic.
type Lazy struct {
	s   *lazyState
	gen int
}

type lazyState struct {
	mu      sync.Mutex
	gen     int
	names   map[string]*lnode // what running processes see
	durable map[string]*lnode // what survives a power loss
	tear    *rand.Rand
	seq     int64 // completed file syncs
}

type lnode struct {
	dir bool
	ino *inode // files only
}

// inode is a file's contents.
type inode struct {
	data     []byte // what reads see
	disk     []byte // what survives a power loss
	pending  []lazyOp
	lastSync int64 // seq of its last completed sync
}

// lazyOp is an unsynced change: a write at off, or a truncation to size.
type lazyOp struct {
	off   int64
	b     []byte
	trunc bool
}

// NewLazy returns an empty Lazy file system (only "/" exists) whose
// crashes drop every unsynced write.
func NewLazy() *Lazy {
	root := &lnode{dir: true}
	return &Lazy{s: &lazyState{names: map[string]*lnode{"/": root}, durable: map[string]*lnode{"/": root}}}
}

// NewLazyTorn is NewLazy whose crashes keep a random part of the
// unsynced writes, drawn from rng.
func NewLazyTorn(rng *rand.Rand) *Lazy {
	l := NewLazy()
	l.s.tear = rng
	return l
}

// Crash simulates a power loss and a reboot: every file loses what no
// completed Sync covered (or, torn, a random suffix of it), every
// directory the entries changed since its last SyncDir. This view and
// the files opened through it fail with ErrCrashed from now on; the
// returned view is the rebooted machine.
func (l *Lazy) Crash() *Lazy {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	names := make(map[string]*lnode, len(s.durable))
	paths := make([]string, 0, len(s.durable))
	for p := range s.durable {
		paths = append(paths, p)
	}
	// Shorter paths first: an entry survives only if its directory did.
	slices.SortFunc(paths, func(a, b string) int { return len(a) - len(b) })
	for _, p := range paths {
		if parent := filepath.Dir(p); p != "/" && (names[parent] == nil || !names[parent].dir) {
			continue
		}
		names[p] = s.durable[p]
	}
	seen := map[*inode]bool{}
	for _, n := range names {
		if n.ino == nil || seen[n.ino] {
			continue
		}
		seen[n.ino] = true
		n.ino.crash(s.tear)
	}
	s.names = names
	s.durable = maps.Clone(names)
	return &Lazy{s: s, gen: s.gen}
}

// Kill simulates the death of the process (SIGKILL) with the machine
// still up: nothing is lost, the page cache keeps every write, but this
// view and the files opened through it fail with ErrCrashed from now
// on. The returned view is the next process's.
func (l *Lazy) Kill() *Lazy {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	return &Lazy{s: s, gen: s.gen}
}

func (ino *inode) crash(tear *rand.Rand) {
	if tear != nil && len(ino.pending) > 0 {
		keep := tear.IntN(len(ino.pending) + 1)
		ops := ino.pending[:keep]
		if keep < len(ino.pending) && tear.IntN(2) == 0 {
			if op := ino.pending[keep]; !op.trunc && len(op.b) > 1 {
				ops = append(slices.Clone(ops), lazyOp{off: op.off, b: op.b[:tear.IntN(len(op.b))]})
			}
		}
		for _, op := range ops {
			ino.disk = op.apply(ino.disk)
		}
	}
	ino.data = slices.Clone(ino.disk)
	ino.pending = nil
}

func (op lazyOp) apply(b []byte) []byte {
	if op.trunc {
		if op.off <= int64(len(b)) {
			return b[:op.off]
		}
		return append(b, make([]byte, op.off-int64(len(b)))...)
	}
	if end := op.off + int64(len(op.b)); end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[op.off:], op.b)
	return b
}

// Seq is the number of file syncs completed so far: a clock that
// LastSync readings compare against.
func (l *Lazy) Seq() int64 {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.seq
}

// LastSync returns the Seq at which the file now called name last
// completed a Sync (0: never).
func (l *Lazy) LastSync(name string) int64 {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if n := l.s.names[filepath.Clean(name)]; n != nil && n.ino != nil {
		return n.ino.lastSync
	}
	return 0
}

// Unsynced returns the bytes written to files and not yet covered by a
// sync, summed over every file.
func (l *Lazy) Unsynced() int64 {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	var n int64
	seen := map[*inode]bool{}
	for _, x := range l.s.names {
		if x.ino != nil && !seen[x.ino] {
			seen[x.ino] = true
			for _, op := range x.ino.pending {
				n += int64(len(op.b))
			}
		}
	}
	return n
}

// lock takes the state's lock if this view is still alive.
func (l *Lazy) lock() error {
	l.s.mu.Lock()
	if l.gen != l.s.gen {
		l.s.mu.Unlock()
		return ErrCrashed
	}
	return nil
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// parentDir checks that name's directory exists.
func (s *lazyState) parentDir(name string) bool {
	p := s.names[filepath.Dir(name)]
	return p != nil && p.dir
}

func (l *Lazy) OpenFile(name string, flag int, _ fs.FileMode) (File, error) {
	name = filepath.Clean(name)
	if err := l.lock(); err != nil {
		return nil, err
	}
	defer l.s.mu.Unlock()
	n := l.s.names[name]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n == nil && !l.s.parentDir(name):
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case n != nil && n.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		return nil, pathErr("open", name, errors.New("is a directory"))
	case n == nil:
		n = &lnode{ino: &inode{}}
		l.s.names[name] = n
	}
	f := &lazyFile{l: l, n: n, name: name, write: flag&(os.O_WRONLY|os.O_RDWR) != 0}
	if flag&os.O_TRUNC != 0 && f.write && len(n.ino.data) > 0 {
		n.ino.change(lazyOp{trunc: true})
	}
	return f, nil
}

func (ino *inode) change(op lazyOp) {
	if !op.trunc {
		op.b = slices.Clone(op.b)
	}
	ino.data = op.apply(ino.data)
	ino.pending = append(ino.pending, op)
}

func (l *Lazy) Remove(name string) error {
	name = filepath.Clean(name)
	if err := l.lock(); err != nil {
		return err
	}
	defer l.s.mu.Unlock()
	n := l.s.names[name]
	if n == nil {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir && len(l.s.children(name)) > 0 {
		return pathErr("remove", name, errors.New("directory not empty"))
	}
	delete(l.s.names, name)
	return nil
}

// children are the names directly in directory dir.
func (s *lazyState) children(dir string) []string {
	var out []string
	for p := range s.names {
		if p != "/" && filepath.Dir(p) == dir {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (l *Lazy) RemoveAll(name string) error {
	name = filepath.Clean(name)
	if err := l.lock(); err != nil {
		return err
	}
	defer l.s.mu.Unlock()
	prefix := strings.TrimSuffix(name, "/") + "/"
	for p := range l.s.names {
		if p == name || strings.HasPrefix(p, prefix) {
			delete(l.s.names, p)
		}
	}
	return nil
}

func (l *Lazy) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	if err := l.lock(); err != nil {
		return err
	}
	defer l.s.mu.Unlock()
	n := l.s.names[oldname]
	switch {
	case n == nil:
		return pathErr("rename", oldname, fs.ErrNotExist)
	case n.dir:
		return pathErr("rename", oldname, errors.New("renaming directories is not modelled"))
	case !l.s.parentDir(newname):
		return pathErr("rename", newname, fs.ErrNotExist)
	}
	if m := l.s.names[newname]; m != nil && m.dir {
		return pathErr("rename", newname, errors.New("is a directory"))
	}
	l.s.names[newname] = n
	delete(l.s.names, oldname)
	return nil
}

func (l *Lazy) MkdirAll(name string, _ fs.FileMode) error {
	name = filepath.Clean(name)
	if err := l.lock(); err != nil {
		return err
	}
	defer l.s.mu.Unlock()
	var dirs []string
	for p := name; ; p = filepath.Dir(p) {
		if n := l.s.names[p]; n != nil {
			if !n.dir {
				return pathErr("mkdir", p, errors.New("not a directory"))
			}
			break
		}
		dirs = append(dirs, p)
	}
	for _, p := range dirs {
		l.s.names[p] = &lnode{dir: true}
	}
	return nil
}

func (l *Lazy) ReadDir(name string) ([]fs.DirEntry, error) {
	name = filepath.Clean(name)
	if err := l.lock(); err != nil {
		return nil, err
	}
	defer l.s.mu.Unlock()
	if n := l.s.names[name]; n == nil || !n.dir {
		return nil, pathErr("readdir", name, fs.ErrNotExist)
	}
	var out []fs.DirEntry
	for _, p := range l.s.children(name) {
		n := l.s.names[p]
		var size int64
		if n.ino != nil {
			size = int64(len(n.ino.data))
		}
		out = append(out, dirEntry{name: filepath.Base(p), dir: n.dir, size: size})
	}
	return out, nil
}

func (l *Lazy) SyncDir(name string) error {
	name = filepath.Clean(name)
	if err := l.lock(); err != nil {
		return err
	}
	defer l.s.mu.Unlock()
	if n := l.s.names[name]; n == nil || !n.dir {
		return pathErr("sync", name, fs.ErrNotExist)
	}
	for p := range l.s.durable {
		if p != "/" && filepath.Dir(p) == name {
			delete(l.s.durable, p)
		}
	}
	for _, p := range l.s.children(name) {
		l.s.durable[p] = l.s.names[p]
	}
	return nil
}

// lazyFile is an open file of a Lazy view; it follows its inode across
// renames and removals, as a file descriptor does.
type lazyFile struct {
	l      *Lazy
	n      *lnode
	name   string
	write  bool
	closed bool
}

var errClosed = errors.New("file already closed")

func (f *lazyFile) lock(op string) error {
	if err := f.l.lock(); err != nil {
		return err
	}
	if f.closed {
		f.l.s.mu.Unlock()
		return pathErr(op, f.name, errClosed)
	}
	return nil
}

func (f *lazyFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.lock("read"); err != nil {
		return 0, err
	}
	defer f.l.s.mu.Unlock()
	if f.n.dir {
		return 0, pathErr("read", f.name, errors.New("is a directory"))
	}
	data := f.n.ino.data
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	k := copy(b, data[off:])
	if k < len(b) {
		return k, io.EOF
	}
	return k, nil
}

func (f *lazyFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.lock("write"); err != nil {
		return 0, err
	}
	defer f.l.s.mu.Unlock()
	if !f.write {
		return 0, pathErr("write", f.name, errors.New("bad file descriptor"))
	}
	f.n.ino.change(lazyOp{off: off, b: b})
	return len(b), nil
}

func (f *lazyFile) Truncate(size int64) error {
	if err := f.lock("truncate"); err != nil {
		return err
	}
	defer f.l.s.mu.Unlock()
	if !f.write {
		return pathErr("truncate", f.name, errors.New("bad file descriptor"))
	}
	f.n.ino.change(lazyOp{off: size, trunc: true})
	return nil
}

func (f *lazyFile) Sync() error {
	if err := f.lock("sync"); err != nil {
		return err
	}
	defer f.l.s.mu.Unlock()
	if f.n.dir {
		return nil
	}
	ino := f.n.ino
	for _, op := range ino.pending {
		ino.disk = op.apply(ino.disk)
	}
	ino.pending = nil
	f.l.s.seq++
	ino.lastSync = f.l.s.seq
	return nil
}

func (f *lazyFile) Size() (int64, error) {
	if err := f.lock("stat"); err != nil {
		return 0, err
	}
	defer f.l.s.mu.Unlock()
	if f.n.dir {
		return 0, nil
	}
	return int64(len(f.n.ino.data)), nil
}

func (f *lazyFile) Close() error {
	if err := f.lock("close"); err != nil {
		return err
	}
	defer f.l.s.mu.Unlock()
	f.closed = true
	return nil
}

type dirEntry struct {
	name string
	dir  bool
	size int64
}

func (d dirEntry) Name() string { return d.name }
func (d dirEntry) IsDir() bool  { return d.dir }
func (d dirEntry) Type() fs.FileMode {
	if d.dir {
		return fs.ModeDir
	}
	return 0
}
func (d dirEntry) Info() (fs.FileInfo, error) { return fileInfo{d}, nil }

type fileInfo struct{ d dirEntry }

func (i fileInfo) Name() string       { return i.d.name }
func (i fileInfo) Size() int64        { return i.d.size }
func (i fileInfo) Mode() fs.FileMode  { return i.d.Type() | 0o644 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.d.dir }
func (i fileInfo) Sys() any           { return nil }
