package statsd

import (
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrBadConfig wraps every configuration validation error.
	ErrBadConfig = errors.New("statsd: bad config")
	// ErrBadClientID is wrapped by a ClientIDError.
	ErrBadClientID = errors.New("statsd: bad client id")
	// ErrBadLine wraps every LineError.
	ErrBadLine = errors.New("statsd: bad line")
	// ErrClosed is returned by a Server used after Close.
	ErrClosed = errors.New("statsd: server closed")
	// ErrAddrInUse is wrapped by an AddrInUseError.
	ErrAddrInUse = errors.New("statsd: address in use")
)

// AddrInUseError is an address a Server cannot listen on because another
// socket, most likely another server, already receives there.
type AddrInUseError struct {
	Network string // "udp", "tcp" or "unixgram"
	Addr    string
	// PID is the process holding the other socket, when it could be
	// found (a process of the same user); else 0.
	PID int
}

func (e *AddrInUseError) Error() string {
	by := "another socket"
	if e.PID > 0 {
		by = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("statsd: %s %s is already in use by %s (is another statsd running there?)", e.Network, e.Addr, by)
}

func (e *AddrInUseError) Unwrap() error { return ErrAddrInUse }

// ClientIDError says why a client id cannot be used in a sequence line.
type ClientIDError struct {
	ID     string
	Reason string
}

func (e *ClientIDError) Error() string {
	return fmt.Sprintf("statsd: bad client id %q: %s", e.ID, e.Reason)
}

func (e *ClientIDError) Unwrap() error { return ErrBadClientID }
