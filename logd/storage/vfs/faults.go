package vfs

import (
	"io/fs"
	"sync"
	"sync/atomic"
)

// Op names a file operation, for a Faults rule.
type Op string

// The operations a Faults rule sees.
const (
	OpOpen     Op = "open"
	OpRead     Op = "read"
	OpWrite    Op = "write"
	OpSync     Op = "sync"
	OpTruncate Op = "truncate"
	OpRemove   Op = "remove"
	OpRename   Op = "rename"
	OpMkdir    Op = "mkdir"
	OpReadDir  Op = "readdir"
	OpSyncDir  Op = "syncdir"
)

// Rule decides whether an operation on name fails, and with what error
// (nil: it goes ahead).
type Rule func(op Op, name string) error

// Faults is an FS that fails the operations its rule picks and passes
// the others to the FS it wraps. A failed write writes the first half
// of its bytes before it fails, as a write that runs out of space part
// way does. Close never fails. Safe for concurrent use; the rule can be
// changed at any time.
type Faults struct {
	fs     FS
	mu     sync.RWMutex
	rule   Rule
	failed atomic.Int64
}

// NewFaults wraps fsys; with no rule set, nothing fails.
func NewFaults(fsys FS) *Faults { return &Faults{fs: fsys} }

// SetRule replaces the rule; nil fails nothing.
func (f *Faults) SetRule(r Rule) {
	f.mu.Lock()
	f.rule = r
	f.mu.Unlock()
}

// Failed is the number of operations failed so far.
func (f *Faults) Failed() int64 { return f.failed.Load() }

func (f *Faults) check(op Op, name string) error {
	f.mu.RLock()
	r := f.rule
	f.mu.RUnlock()
	if r == nil {
		return nil
	}
	err := r(op, name)
	if err != nil {
		f.failed.Add(1)
		return &fs.PathError{Op: string(op), Path: name, Err: err}
	}
	return nil
}

func (f *Faults) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *Faults) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

func (f *Faults) RemoveAll(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.fs.RemoveAll(name)
}

func (f *Faults) Rename(oldname, newname string) error {
	if err := f.check(OpRename, newname); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

func (f *Faults) MkdirAll(name string, perm fs.FileMode) error {
	if err := f.check(OpMkdir, name); err != nil {
		return err
	}
	return f.fs.MkdirAll(name, perm)
}

func (f *Faults) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.check(OpReadDir, name); err != nil {
		return nil, err
	}
	return f.fs.ReadDir(name)
}

func (f *Faults) SyncDir(name string) error {
	if err := f.check(OpSyncDir, name); err != nil {
		return err
	}
	return f.fs.SyncDir(name)
}

type faultFile struct {
	File
	fs   *Faults
	name string
}

func (f *faultFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		k, _ := f.File.WriteAt(b[:len(b)/2], off)
		return k, err
	}
	return f.File.WriteAt(b, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// Readahead passes the hint on when the wrapped file takes it.
func (f *faultFile) Readahead(off, n int64) {
	if r, ok := f.File.(Readaheader); ok {
		r.Readahead(off, n)
	}
}
