package statsd

import (
	"net"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// newBatchReader returns a function that reads up to len(ms) datagrams
// from c into the buffers of ms with one recvmmsg, setting their N and
// Flags. It asks for no source address: x/net's ReadBatch parses one
// into a new net.UDPAddr for every datagram, two allocations a
// datagram that the server never reads, and the garbage collections
// that follow.
func newBatchReader(c *net.UDPConn, ms []ipv4.Message) (func() (int, error), error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	hs := make([]unix.Mmsghdr, len(ms))
	iovs := make([]unix.Iovec, len(ms))
	for i := range ms {
		b := ms[i].Buffers[0]
		iovs[i].Base = &b[0]
		iovs[i].SetLen(len(b))
		hs[i].Hdr.Iov = &iovs[i]
		hs[i].Hdr.SetIovlen(1)
	}
	var (
		n     int
		errno unix.Errno
	)
	recv := func(fd uintptr) bool {
		for {
			r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)),
				unix.MSG_DONTWAIT, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait until the socket is readable
			}
			n, errno = int(r), e
			return true
		}
	}
	return func() (int, error) {
		if err := rc.Read(recv); err != nil {
			return 0, err
		}
		if errno != 0 {
			return 0, errno
		}
		for i := 0; i < n; i++ {
			ms[i].N = int(hs[i].Len)
			ms[i].Flags = int(hs[i].Hdr.Flags)
		}
		return n, nil
	}, nil
}
