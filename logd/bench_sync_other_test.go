//go:build !linux

package logd

import "os"

// rawDatasync is the raw-disk baseline's sync where there is no
// fdatasync.
func rawDatasync(f *os.File) error { return f.Sync() }

// dropCache writes f's dirty pages; dropping them from the page cache
// is implemented on Linux only, so reads here may come from memory.
func dropCache(f *os.File) { _ = f.Sync() }
