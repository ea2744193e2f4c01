package zmq

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
)

// removeStaleSocket removes the socket file at path if it was left by a
// process that is gone, as libzmq does before it binds an ipc://
// endpoint: only a socket file, and only if connecting to it is
// refused (nothing listens). It reports whether it removed it.
func removeStaleSocket(path string) bool {
	if strings.HasPrefix(path, "@") { // abstract: no file
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		return false
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return false
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	return os.Remove(path) == nil
}
