package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is a file system: the operations logd's storage performs, with
// the meaning of the os functions of the same names. Names are paths.
type FS interface {
	// OpenFile opens name; flag is os.O_RDONLY, os.O_RDWR or
	// os.O_WRONLY, with os.O_CREATE, os.O_EXCL and os.O_TRUNC.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(name string, perm fs.FileMode) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// SyncDir makes the creations, renames and removals of entries in
	// directory name durable (fsync of the directory).
	SyncDir(name string) error
}

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync makes the file's data and size durable (fdatasync).
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

// Readaheader is implemented by files that can start reading a range
// into the page cache ahead of a read (a hint).
type Readaheader interface {
	Readahead(off, n int64)
}

// WriteBehinder is implemented by files that can start writing a range
// of written data to the device ahead of a sync (a hint).
type WriteBehinder interface {
	WriteBehind(off, n int64)
}

// Duper is implemented by files that live in the operating system's
// file system, where data can be sent from them without a copy
// (sendfile(2); Linux only). Dup returns a new descriptor of the open
// file, which keeps its data readable after the file is closed or
// removed; the caller closes it. Files that inject faults or keep data
// in memory do not implement it: their reads must go through ReadAt.
type Duper interface {
	Dup() (*os.File, error)
}

// ReadFile reads the whole of a file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if k, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && k == len(b)) {
		return nil, err
	}
	return b, nil
}

// WriteFile creates or replaces name with data and syncs it (not its
// directory entry: see FS.SyncDir).
func WriteFile(fsys FS, name string, data []byte) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MkdirAllDurable creates dir and any missing parents, and syncs the
// directory above each one it created, so the new entries survive a
// power loss.
func MkdirAllDurable(fsys FS, dir string) error {
	dir = filepath.Clean(dir)
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.ReadDir(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
