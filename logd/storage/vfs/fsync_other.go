//go:build !linux

package vfs

import "os"

// fdatasync flushes a file's data; without fdatasync(2), fsync.
func fdatasync(f *os.File) error { return f.Sync() }

// readahead is a hint; without posix_fadvise it does nothing.
func readahead(*os.File, int64, int64) {}
