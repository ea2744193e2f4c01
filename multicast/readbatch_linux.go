//go:build linux

package multicast

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// sysBatch reads a batch with recvmmsg(2) itself, the source addresses
// into raw socket addresses it keeps: x/net's ReadBatch parses each
// into a new net.UDPAddr, two allocations a datagram (with their
// garbage collections) where a netip.AddrPort needs none. It waits in
// Go's netpoller, so the socket's read deadline and Close wake it.
type sysBatch struct {
	rc    syscall.RawConn
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family
	oobs  []int                   // each entry's control buffer length
	used  int                     // entries the last read filled
	n     int
	errno syscall.Errno
	recv  func(fd uintptr) bool
}

func newSysBatch(c *net.UDPConn, ms []ipv4.Message) (*sysBatch, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &sysBatch{
		rc:    rc,
		hs:    make([]unix.Mmsghdr, len(ms)),
		iovs:  make([]unix.Iovec, len(ms)),
		names: make([]unix.RawSockaddrInet6, len(ms)),
		oobs:  make([]int, len(ms)),
	}
	for i := range ms {
		b := ms[i].Buffers[0]
		s.iovs[i].Base = &b[0]
		s.iovs[i].SetLen(len(b))
		h := &s.hs[i].Hdr
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
		h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		if oob := ms[i].OOB; len(oob) > 0 {
			h.Control = &oob[0]
			s.oobs[i] = len(oob)
		}
		s.reset(i)
	}
	s.recv = func(fd uintptr) bool {
		for {
			r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.hs[0])), uintptr(len(s.hs)),
				unix.MSG_DONTWAIT, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // the netpoller waits for the socket
			}
			s.n, s.errno = int(r), e
			return true
		}
	}
	return s, nil
}

// reset restores the lengths the kernel overwrote in entry i.
func (s *sysBatch) reset(i int) {
	h := &s.hs[i].Hdr
	h.Namelen = unix.SizeofSockaddrInet6
	h.SetControllen(s.oobs[i])
}

// read fills ms with one recvmmsg and returns how many entries it got.
func (s *sysBatch) read(ms []ipv4.Message) (int, error) {
	for i := range s.used {
		s.reset(i)
	}
	s.used = 0
	if err := s.rc.Read(s.recv); err != nil {
		return 0, err
	}
	if s.errno != 0 {
		return 0, &net.OpError{Op: "recvmmsg", Net: "udp", Err: s.errno}
	}
	s.used = s.n
	for i := range s.n {
		h := &s.hs[i]
		ms[i].N = int(h.Len)
		ms[i].NN = int(h.Hdr.Controllen)
		ms[i].Flags = int(h.Hdr.Flags)
	}
	return s.n, nil
}

// from returns the source address of entry i of the last read.
func (s *sysBatch) from(i int) netip.AddrPort {
	raw := &s.names[i]
	switch raw.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(raw))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), netPort(sa.Port))
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(raw.Addr).Unmap(), netPort(raw.Port))
	}
	return netip.AddrPort{}
}

// netPort reads a port the kernel stored in network byte order.
func netPort(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}
