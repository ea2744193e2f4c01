package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// Dup returns a descriptor of its own for the file (see Duper).
func (f osFile) Dup() (*os.File, error) {
	fd, err := unix.FcntlInt(f.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.f.Name()), nil
}
