//go:build !linux

package logd

import "net"

// waitHangUp: without poll's POLLRDHUP the end of a stream behind
// unread bytes cannot be seen without reading them; the watch of a
// connection whose read buffer is full ends, and a close is seen at the
// next read.
func waitHangUp(net.Conn) bool { return false }
