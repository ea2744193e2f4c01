package logd

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/logd/storage"
)

// sendfileTo returns the function that sends a file region on nc with
// sendfile(2), the bytes going from the page cache to the socket without
// a copy through user space (as Kafka serves fetches), or nil when nc is
// not a plain TCP or Unix socket (TLS must encrypt in user space). It
// waits for the socket to take more as a write does, bounded by nc's
// write deadline.
func sendfileTo(nc net.Conn) func(storage.Region) error {
	var (
		raw syscall.RawConn
		err error
	)
	switch c := nc.(type) {
	case *net.TCPConn:
		raw, err = c.SyscallConn()
	case *net.UnixConn:
		raw, err = c.SyscallConn()
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	return func(r storage.Region) error {
		off, left := r.Off, r.Len
		in := int(r.File.Fd())
		var serr error
		err := raw.Write(func(fd uintptr) bool {
			for left > 0 {
				n, err := unix.Sendfile(int(fd), in, &off, min(left, 1<<30))
				if n > 0 {
					left -= n
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket takes more
				case err == unix.EINTR:
				case err != nil:
					serr = err
					return true
				case n == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than the region
					return true
				}
			}
			return true
		})
		if err != nil {
			return err
		}
		return serr
	}
}
