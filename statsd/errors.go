package statsd

import (
	"errors"
	"fmt"
	"net"
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

// ConfigError is a Config field whose value is outside what it allows.
// Field is the field's name ("FlushInterval", "UDP"; "Graphite.Address"
// for a backend's field checked by Settings.Validate), or, in an error of
// ParseConfigFile, the file's option name ("flushInterval"). Value is the
// value at fault: for a list, the element.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("statsd: bad config: %s %v: %s", e.Field, e.Value, e.Want)
}

func (e *ConfigError) Unwrap() error { return ErrBadConfig }

// Setting returns the field, its value and what it allows.
func (e *ConfigError) Setting() (string, any, string) { return e.Field, e.Value, e.Want }

func badConfig(field string, value any, want string) error {
	return &ConfigError{Field: field, Value: value, Want: want}
}

// ListenError is an address a Server or the Prometheus backend could not
// listen on. Err is the system's reason ("bind: permission denied").
type ListenError struct {
	Network, Addr string
	Err           error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("statsd: listen %s %s: %v", e.Network, e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// ListenFailure returns the network, the address and why.
func (e *ListenError) ListenFailure() (network, addr, reason string) {
	return e.Network, e.Addr, e.Err.Error()
}

// listenError makes err, from listening on addr, a ListenError without
// net's own "listen <network> <addr>: " wrapping.
func listenError(network, addr string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return &ListenError{Network: network, Addr: addr, Err: err}
}

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
	_, _, reason := e.ListenFailure()
	return fmt.Sprintf("statsd: listen %s %s: %s", e.Network, e.Addr, reason)
}

// ListenFailure returns the network, the address and why.
func (e *AddrInUseError) ListenFailure() (network, addr, reason string) {
	by := "another socket"
	if e.PID > 0 {
		by = "process " + strconv.Itoa(e.PID)
	}
	return e.Network, e.Addr, "already in use by " + by + " (is another statsd running there?)"
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
