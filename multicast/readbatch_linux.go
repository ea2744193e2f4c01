//go:build linux

package multicast

import (
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/transport/udpbatch"
)

// sysBatch reads a batch with one recvmmsg (udpbatch: no allocation a
// datagram, where x/net's ReadBatch made a net.UDPAddr for each). It
// waits in Go's netpoller, so the socket's read deadline and Close
// wake it.
type sysBatch struct {
	rc    syscall.RawConn
	h     *udpbatch.Headers
	ms    []ipv4.Message
	n     int
	errno unix.Errno
	recv  func(fd uintptr) bool // read's: the netpoller waits on EAGAIN
	look  func(fd uintptr)      // readNow's
}

func newSysBatch(c *net.UDPConn, ms []ipv4.Message) (*sysBatch, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &sysBatch{rc: rc, h: udpbatch.NewHeaders(ms, true), ms: ms}
	s.look = func(fd uintptr) { s.n, s.errno = s.h.Recv(fd, s.ms) }
	s.recv = func(fd uintptr) bool {
		s.look(fd)
		return s.errno != unix.EAGAIN // else the netpoller waits for the socket
	}
	return s, nil
}

// read fills the entries given to newSysBatch with one recvmmsg and
// returns how many it got.
func (s *sysBatch) read() (int, error) {
	if err := s.rc.Read(s.recv); err != nil {
		return 0, err
	}
	if s.errno != 0 {
		return 0, &net.OpError{Op: "recvmmsg", Net: "udp", Err: s.errno}
	}
	return s.n, nil
}

// readNow is read without waiting: it returns 0 when the socket is
// empty. It looks at the socket even when the read deadline has passed
// (read then returns at once without a look).
func (s *sysBatch) readNow() (int, error) {
	if err := s.rc.Control(s.look); err != nil {
		return 0, err
	}
	switch s.errno {
	case 0:
		return s.n, nil
	case unix.EAGAIN:
		return 0, nil
	}
	return 0, &net.OpError{Op: "recvmmsg", Net: "udp", Err: s.errno}
}

// canPoll: readNow looks at the socket without waiting, so a
// subscriber can spin on it (Config.Spin).
const canPoll = true

// from returns the source address of entry i of the last read.
func (s *sysBatch) from(i int) netip.AddrPort { return s.h.From(i) }
