//go:build linux

package multicast

import (
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/brokerless/brokerless/transport/udpbatch"
)

// sendSocket is the socket a Publisher sends from on Linux: a second
// socket bound to the address of the one it takes NACKs on (both with
// SO_REUSEPORT), blocking, and never registered with Go's network
// poller. Sending through the NACK socket itself woke a thread for
// nothing at every datagram: when the kernel frees a sent datagram it
// signals room to write to the socket's waiters, and the NACK reader,
// parked in the poller, made the poller's epoll_wait one of them (perf
// stat at 10,000 msgs/s: 1.1 context switches a message and 1.10 CPUs
// for the sending process, against 0.06 and 1.0 for a raw UDP sender;
// 0.18 and 1.00 with this socket). Nothing waits on this socket: it is
// outside the poller, and nothing reads it. A classic BPF program on
// the port's reuseport group gives every datagram that arrives for the
// port to the NACK socket (the group's first member), so subscribers
// still NACK the address the data comes from.
type sendSocket struct {
	mu sync.Mutex // held by each send and by close: a closed number is never written to
	fd int        // -1 once closed
	h  udpbatch.SendHeaders
}

// reusePort is listenUDP's control for the NACK socket: it joins the
// port's reuseport group first, so it is the member the group's program
// picks.
var reusePort = socketOption(unix.SO_REUSEPORT)

// openSendSocket opens the send socket beside nack (made with
// reusePort), set up as setupSender sets a sender, with the send buffer
// asked for; it returns the buffer granted.
func openSendSocket(nack *net.UDPConn, ifi *net.Interface, cfg *Config) (*sendSocket, int, error) {
	laddr := nack.LocalAddr().(*net.UDPAddr).AddrPort()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, 0, os.NewSyscallError("socket", err)
	}
	fail := func(op string, err error) (*sendSocket, int, error) {
		unix.Close(fd)
		return nil, 0, fmt.Errorf("multicast: send socket: %s: %w", op, err)
	}
	loop := 1
	if cfg.NoLoopback {
		loop = 0
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return fail("SO_REUSEPORT", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: laddr.Addr().As4(), Port: int(laddr.Port())}); err != nil {
		return fail("bind "+laddr.String(), err)
	}
	// Every datagram for the port goes to the group's member 0: the
	// NACK socket. One instruction: return 0.
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF,
		&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		return fail("SO_ATTACH_REUSEPORT_CBPF", err)
	}
	if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(ifi.Index)}); err != nil {
		return fail("IP_MULTICAST_IF "+ifi.Name, err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, cfg.TTL); err != nil {
		return fail("IP_MULTICAST_TTL", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, loop); err != nil {
		return fail("IP_MULTICAST_LOOP", err)
	}
	if cfg.SendBuffer > 0 {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, cfg.SendBuffer)
	}
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if err != nil {
		return fail("SO_SNDBUF", err)
	}
	return &sendSocket{fd: fd}, got, nil
}

// writeBatch sends ms with one sendmmsg, waiting for room in the send
// buffer as a blocking socket does; it has Publisher.writeBatch's
// contract (x/net's WriteBatch).
func (s *sendSocket) writeBatch(ms []ipv4.Message, flags int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return 0, net.ErrClosed
	}
	n, errno := s.h.Send(uintptr(s.fd), ms, flags)
	if errno != 0 {
		return 0, &net.OpError{Op: "sendmmsg", Net: "udp4", Err: os.NewSyscallError("sendmmsg", errno)}
	}
	return n, nil
}

// close closes the socket once no send is in flight.
func (s *sendSocket) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// control runs f on the socket's descriptor, as syscall.RawConn.Control
// does (tests set options on it).
func (s *sendSocket) control(f func(fd uintptr)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return net.ErrClosed
	}
	f(uintptr(s.fd))
	return nil
}
