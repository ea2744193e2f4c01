//go:build !linux

package multicast

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/net/ipv4"
)

// sendSocket exists on Linux only (sendsock_linux.go); elsewhere the
// publisher sends through its NACK socket.
type sendSocket struct{}

// reusePort sets nothing here.
func reusePort(_, _ string, _ syscall.RawConn) error { return nil }

func openSendSocket(*net.UDPConn, *net.Interface, *Config) (*sendSocket, int, error) {
	return nil, 0, errors.ErrUnsupported
}

func (*sendSocket) writeBatch([]ipv4.Message, int) (int, error) { return 0, errors.ErrUnsupported }

func (*sendSocket) close() error { return nil }

func (*sendSocket) control(func(fd uintptr)) error { return errors.ErrUnsupported }
