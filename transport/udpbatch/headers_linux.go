//go:build linux

package udpbatch

import (
	"net/netip"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Headers are the recvmmsg headers of a batch of ipv4.Message entries:
// one buffer each (Buffers[0]), a control buffer when OOB is set, and,
// when asked for, room for the source address. Not safe for concurrent
// use.
type Headers struct {
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family; nil without sources
	oobs  []int                   // each entry's control buffer length
	n     int                     // entries the last Recv filled
}

// NewHeaders makes the headers of ms, whose buffers (Buffers[0], OOB)
// they point to from then on; sources says whether Recv asks the
// kernel for each datagram's source address.
func NewHeaders(ms []ipv4.Message, sources bool) *Headers {
	h := &Headers{hs: make([]unix.Mmsghdr, len(ms)), iovs: make([]unix.Iovec, len(ms)), oobs: make([]int, len(ms))}
	if sources {
		h.names = make([]unix.RawSockaddrInet6, len(ms))
	}
	for i := range ms {
		b := ms[i].Buffers[0]
		h.iovs[i].Base = &b[0]
		h.iovs[i].SetLen(len(b))
		hdr := &h.hs[i].Hdr
		hdr.Iov = &h.iovs[i]
		hdr.SetIovlen(1)
		if sources {
			hdr.Name = (*byte)(unsafe.Pointer(&h.names[i]))
		}
		if oob := ms[i].OOB; len(oob) > 0 {
			hdr.Control = &oob[0]
			h.oobs[i] = len(oob)
		}
		h.reset(i)
	}
	return h
}

// reset restores the lengths the kernel overwrote in entry i.
func (h *Headers) reset(i int) {
	hdr := &h.hs[i].Hdr
	if h.names != nil {
		hdr.Namelen = unix.SizeofSockaddrInet6
	}
	hdr.SetControllen(h.oobs[i])
}

// Recv makes one recvmmsg on fd without waiting (MSG_DONTWAIT; EINTR
// retried) and returns how many entries it filled, setting their N, NN
// and Flags, or the error number: EAGAIN when the socket is empty.
func (h *Headers) Recv(fd uintptr, ms []ipv4.Message) (int, unix.Errno) {
	for i := range h.n {
		h.reset(i)
	}
	h.n = 0
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&h.hs[0])), uintptr(len(h.hs)),
			unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		h.n = int(r)
		for i := range h.n {
			m := &h.hs[i]
			ms[i].N = int(m.Len)
			ms[i].NN = int(m.Hdr.Controllen)
			ms[i].Flags = int(m.Hdr.Flags)
		}
		return h.n, 0
	}
}

// From returns the source address of entry i of the last Recv (the zero
// AddrPort without sources, or for a family other than IPv4 and IPv6).
func (h *Headers) From(i int) netip.AddrPort {
	if h.names == nil {
		return netip.AddrPort{}
	}
	raw := &h.names[i]
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
