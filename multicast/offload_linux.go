//go:build linux

package multicast

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP segmentation offload (GSO, UDP_SEGMENT, Linux 4.18) lets one
// sendmmsg entry carry a run of equal-size datagrams that the kernel
// splits late, paying its per-datagram cost once per run; generic
// receive offload (GRO, UDP_GRO, Linux 5.0) hands a subscriber such a
// run as one buffer with its segment size. On lo, where the sender's
// system call also runs the receivers' side of the kernel, both save
// most of the per-datagram work. Both are detected at run time, and
// the publisher falls back to one datagram per entry when a GSO send
// fails (a device without checksum offload answers EIO, a segment
// larger than the device MTU EINVAL).

// gsoMaxSegments is the kernel's UDP_MAX_SEGMENTS.
const gsoMaxSegments = 64

// gsoMaxBytes bounds the payload of one GSO send: one IPv4 datagram's.
const gsoMaxBytes = maxDatagram

// groBuffer is a receive buffer for a GRO run: the kernel merges up to
// 64 KiB.
const groBuffer = 1 << 16

var gsoProbe = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	_, err = unix.GetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
	return err == nil
})

// gsoAvailable reports whether this kernel knows UDP_SEGMENT.
func gsoAvailable() bool { return gsoProbe() }

// enableGRO asks the kernel to merge runs of datagrams read from c; it
// reports whether the kernel took it.
func enableGRO(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); err != nil {
		return false
	}
	return serr == nil
}

// segmentCmsg is the control message of a GSO send of segments of size
// bytes.
func segmentCmsg(size int) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafePointer(&b[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	putSegment(b, size)
	return b
}

// putSegment sets the segment size of a control message segmentCmsg
// made.
func putSegment(b []byte, size int) {
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
}

// groOOB is the control-message buffer a GRO read needs.
const groOOB = 64

// groSegment returns the segment size the kernel reported in the
// control messages oob of a GRO read, or 0 (one datagram).
func groSegment(oob []byte) int {
	for len(oob) >= unix.CmsgLen(0) {
		h := (*unix.Cmsghdr)(unsafePointer(&oob[0]))
		l := int(h.Len)
		if l < unix.CmsgLen(0) || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(binary.NativeEndian.Uint32(oob[unix.CmsgLen(0):]))
		}
		oob = oob[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(oob)):]
	}
	return 0
}

// unsafePointer is the address of *p, to read or write a control
// message header in place.
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// gsoRefused reports whether err, from a send of a GSO entry, is the
// kernel refusing segmentation on this socket or route (EIO: no
// checksum offload; EINVAL: a segment above the MTU, or no UDP
// checksums; EOPNOTSUPP, ENOPROTOOPT; EMSGSIZE: a run too long for the
// path), which the same datagrams sent one by one avoid, rather than a
// shortage (ENOBUFS, EAGAIN, ENOMEM) or a failure of the destination
// that they would meet too.
func gsoRefused(err error) bool {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case unix.EIO, unix.EINVAL, unix.EOPNOTSUPP, unix.ENOPROTOOPT, unix.EMSGSIZE:
		return true
	}
	return false
}
