//go:build !linux

package vfs

import "os"

// fdatasync flushes a file's data; without fdatasync(2), fsync.
func fdatasync(f *os.File) error { return f.Sync() }

// writeBehind is a hint; without sync_file_range it does nothing.
func writeBehind(*os.File, int64, int64) {}

// readahead is a hint; without posix_fadvise it does nothing.
func readahead(*os.File, int64, int64) {}
