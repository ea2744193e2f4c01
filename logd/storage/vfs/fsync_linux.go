package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes a file's data and the metadata needed to read it
// back (its size), not its timestamps: what durability needs, cheaper
// than fsync.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// readahead asks the kernel to start reading a file range into the page
// cache without waiting for it.
func readahead(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
}
