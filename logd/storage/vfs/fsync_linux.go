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

// writeBehind starts writing a range of dirty pages to the device
// without waiting for it (sync_file_range(2) with WRITE alone: no
// durability, no metadata; it may wait for the device's queue). A file
// closed meanwhile is skipped: the raw connection holds its descriptor.
func writeBehind(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// readahead asks the kernel to start reading a file range into the page
// cache without waiting for it.
func readahead(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
}
