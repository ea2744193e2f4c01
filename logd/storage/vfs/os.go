package vfs

import (
	"io/fs"
	"os"
)

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

type osFile struct{ f *os.File }

func (f osFile) ReadAt(b []byte, off int64) (int, error)  { return f.f.ReadAt(b, off) }
func (f osFile) WriteAt(b []byte, off int64) (int, error) { return f.f.WriteAt(b, off) }
func (f osFile) Sync() error                              { return fdatasync(f.f) }
func (f osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f osFile) Close() error                             { return f.f.Close() }
func (f osFile) Readahead(off, n int64)                   { readahead(f.f, off, n) }
func (f osFile) WriteBehind(off, n int64)                 { writeBehind(f.f, off, n) }

func (f osFile) Size() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
