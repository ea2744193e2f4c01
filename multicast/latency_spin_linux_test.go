//go:build linux

package multicast

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// spinRead polls c without waiting, for up to d, as Config.Spin makes
// the transport's subscriber do: it returns the length of a datagram
// read into buf, ok false when none came (the socket is non-blocking,
// as Go makes its sockets, so read(2) returns EAGAIN when it is empty).
func spinRead(c *net.UDPConn, buf []byte, d time.Duration) (n int, ok bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		var rerr error
		if err := rc.Control(func(fd uintptr) { n, rerr = unix.Read(int(fd), buf) }); err != nil {
			return 0, false
		}
		if rerr == nil {
			return n, true
		}
	}
	return 0, false
}
