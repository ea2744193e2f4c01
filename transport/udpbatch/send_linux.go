//go:build linux

package udpbatch

import (
	"net"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// SendHeaders are the sendmmsg headers of batches of ipv4.Message
// entries, each with its buffers (several: the kernel sends them as one
// datagram, or as a run of them with a UDP_SEGMENT control message),
// its control buffer and its destination (a *net.UDPAddr). They are
// rebuilt at every Send, in storage kept from one call to the next, so
// that a batch costs no allocation once the largest has been seen. Not
// safe for concurrent use.
type SendHeaders struct {
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family
}

// Send makes one sendmmsg of ms on fd, flags as given (0 on a blocking
// socket waits for room; EINTR is retried), and returns how many entries
// the kernel took, or the error number when it took none. A destination
// that is not a *net.UDPAddr of IPv4 or IPv6 fails with EAFNOSUPPORT.
func (h *SendHeaders) Send(fd uintptr, ms []ipv4.Message, flags int) (int, unix.Errno) {
	if len(ms) == 0 {
		return 0, 0
	}
	if err := h.build(ms); err != 0 {
		return 0, err
	}
	for {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&h.hs[0])), uintptr(len(ms)), uintptr(flags), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		for i := range int(r) {
			ms[i].N = int(h.hs[i].Len)
		}
		return int(r), 0
	}
}

// build fills the headers of ms.
func (h *SendHeaders) build(ms []ipv4.Message) unix.Errno {
	if len(h.hs) < len(ms) {
		h.hs = make([]unix.Mmsghdr, len(ms))
		h.names = make([]unix.RawSockaddrInet6, len(ms))
	}
	niov := 0
	for i := range ms {
		niov += len(ms[i].Buffers)
	}
	if len(h.iovs) < niov {
		h.iovs = make([]unix.Iovec, niov)
	}
	iov := 0
	for i := range ms {
		m := &ms[i]
		hdr := &h.hs[i].Hdr
		*hdr = unix.Msghdr{}
		h.hs[i].Len = 0
		first := iov
		for _, b := range m.Buffers {
			v := &h.iovs[iov]
			*v = unix.Iovec{}
			if len(b) > 0 {
				v.Base = &b[0]
				v.SetLen(len(b))
			}
			iov++
		}
		if iov > first {
			hdr.Iov = &h.iovs[first]
			hdr.SetIovlen(iov - first)
		}
		if len(m.OOB) > 0 {
			hdr.Control = &m.OOB[0]
			hdr.SetControllen(len(m.OOB))
		}
		if m.Addr != nil {
			n, err := h.name(i, m.Addr)
			if err != 0 {
				return err
			}
			hdr.Name = (*byte)(unsafe.Pointer(&h.names[i]))
			hdr.Namelen = n
		}
	}
	return 0
}

// name stores addr as entry i's destination and returns its length.
func (h *SendHeaders) name(i int, addr net.Addr) (uint32, unix.Errno) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, unix.EAFNOSUPPORT
	}
	ap := ua.AddrPort()
	raw := &h.names[i]
	*raw = unix.RawSockaddrInet6{}
	port := (*[2]byte)(unsafe.Pointer(&raw.Port)) // network byte order
	port[0], port[1] = byte(ap.Port()>>8), byte(ap.Port())
	switch a := ap.Addr(); {
	case a.Is4() || a.Is4In6():
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(raw))
		sa.Family = unix.AF_INET
		sa.Addr = a.Unmap().As4()
		return unix.SizeofSockaddrInet4, 0
	case a.Is6():
		raw.Family = unix.AF_INET6
		raw.Addr = a.As16()
		return unix.SizeofSockaddrInet6, 0
	}
	return 0, unix.EAFNOSUPPORT
}
