package zmq

import (
	"fmt"
	"net"
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
