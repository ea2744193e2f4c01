package zmq

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// endpoint is a ZeroMQ endpoint: tcp://HOST:PORT or ipc://PATH.
type endpoint struct {
	network string // "tcp" or "unix"
	addr    string
}

func (e endpoint) String() string {
	if e.network == "unix" {
		return "ipc://" + e.addr
	}
	return "tcp://" + e.addr
}

// parseEndpoint reads a ZeroMQ endpoint, tcp://HOST:PORT (HOST may be
// "*", every address) or ipc://PATH.
func parseEndpoint(s string) (endpoint, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || rest == "" {
		return endpoint{}, fmt.Errorf("endpoint %q: want tcp://HOST:PORT or ipc://PATH", s)
	}
	switch scheme {
	case "tcp":
		host, port, err := net.SplitHostPort(rest)
		if err != nil || port == "" {
			return endpoint{}, fmt.Errorf("endpoint %q: want tcp://HOST:PORT", s)
		}
		if host == "*" {
			host = ""
		}
		return endpoint{network: "tcp", addr: net.JoinHostPort(host, port)}, nil
	case "ipc":
		return endpoint{network: "unix", addr: rest}, nil
	}
	return endpoint{}, fmt.Errorf("endpoint %q: transport %q: want tcp or ipc", s, scheme)
}

// checkEndpoint checks an endpoint to bind (a port from 0, any free one,
// to 65535) or to connect to (connect: a host, and a port from 1 to
// 65535, where something can listen), so that a typo fails at once
// instead of redialling a place where nothing can ever answer.
func checkEndpoint(s string, connect bool) error {
	e, err := parseEndpoint(s)
	if err != nil || e.network != "tcp" {
		return err
	}
	host, port, _ := net.SplitHostPort(e.addr)
	n, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return errors.New("want a port from 0 to 65535")
	case connect && (host == "" || n == 0):
		return errors.New("a connected endpoint needs a host and a port from 1 to 65535")
	}
	return nil
}
