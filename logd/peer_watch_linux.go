package logd

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitHangUp waits, reading nothing, until the peer of nc hangs up
// (true) or a read deadline passes or nc closes (false). It is what
// watches a connection whose read buffer is full: bytes waiting in the
// socket do not hide the end of the stream that follows them from
// poll's POLLRDHUP. nc is a TCP socket, or wraps one (TLS); for any
// other it returns false at once.
func waitHangUp(nc net.Conn) bool {
	for {
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	// The callback runs again at each readiness event of the socket
	// (new bytes, the peer's FIN or RST) until it returns true.
	_ = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
			return false
		}
		gone = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
		return gone
	})
	return gone
}
