package main

import (
	"errors"
	"net"
	"slices"
	"strings"

	"github.com/brokerless/brokerless/transport/zmq"
)

// zmqEndpoints turns the values of an address flag into ZeroMQ
// endpoints: tcp://HOST:PORT and ipc://PATH pass as they are, a bare
// HOST:PORT is tcp://HOST:PORT. Anything else is a usage error naming
// the flag; the library checks the rest of each endpoint.
func zmqEndpoints(flag string, values []string) ([]string, error) {
	var eps []string
	for _, v := range values {
		switch {
		case strings.HasPrefix(v, "tcp://"), strings.HasPrefix(v, "ipc://"):
			eps = append(eps, v)
		case !strings.Contains(v, "://"):
			eps = append(eps, "tcp://"+v)
		default:
			return nil, usagef("--%s %s: want tcp://HOST:PORT, HOST:PORT or ipc://PATH", flag, v)
		}
	}
	return eps, nil
}

// zmqConfigError names the flag behind a zmq ConfigError: an endpoint
// is found among the endpoints each flag gave (eps), other fields are
// mapped by flagOf as configError does.
func zmqConfigError(err error, eps map[string][]string, flagOf map[string]string) error {
	var ce *zmq.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	if s, ok := ce.Value.(string); ok {
		for flag, list := range eps {
			if slices.Contains(list, s) {
				return usagef("--%s %s: %s", flag, s, ce.Want)
			}
		}
	}
	return configError(err, flagOf)
}

// zmqAddr is an address a zmq socket listens on, as an endpoint.
func zmqAddr(a net.Addr) string {
	if u, ok := a.(*net.UnixAddr); ok {
		return "ipc://" + u.Name
	}
	return "tcp://" + a.String()
}

// bound is where a publisher or subscriber that binds (a zmq+tcp://
// URL with port 0 among them) listens, e.g. "tcp://127.0.0.1:41234", or
// "" for one that binds nothing.
func bound(v any) string {
	b, ok := v.(interface{ Addrs() []net.Addr })
	if !ok || len(b.Addrs()) == 0 {
		return ""
	}
	return zmqAddrs(b.Addrs())
}

// boundSuffix is "; bound to " and bound(v), or "".
func boundSuffix(v any) string {
	if b := bound(v); b != "" {
		return "; bound to " + b
	}
	return ""
}

// zmqAddrs lists addrs as endpoints, separated by commas.
func zmqAddrs(addrs []net.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = zmqAddr(a)
	}
	return strings.Join(s, ", ")
}

// checkAtLeast is a usage error for a flag that must be at least min.
func checkAtLeast(flag string, v, min int) error {
	if v < min {
		return usagef("--%s %d: want at least %d", flag, v, min)
	}
	return nil
}

// needEndpoint is the error of a command given no address to bind or
// connect.
func needEndpoint(flags ...string) error {
	return usagef("give --%s", strings.Join(flags, " or --"))
}
