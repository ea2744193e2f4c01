//go:build linux

package logd

import (
	"os"

	"golang.org/x/sys/unix"
)

// rawDatasync is the raw-disk baseline's fdatasync, the call logd's
// storage makes on Linux.
func rawDatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// dropCache writes f's dirty pages and drops its pages from the page
// cache, so that the next read of it comes from the disk.
func dropCache(f *os.File) {
	_ = unix.Fdatasync(int(f.Fd()))
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
