package statsd

import "net"

// checkListenAddr checks that addr is host:port, the host possibly
// empty, with a port number (or service name) in [0, 65535]; field
// names it in the error.
func checkListenAddr(field, network, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return badConfig(field, addr, "must be host:port, e.g. 127.0.0.1:8125 or :8125")
	}
	if _, err := net.LookupPort(network, port); err != nil {
		return badConfig(field, addr, "must have a port in [0, 65535]")
	}
	return nil
}

// checkDialAddr checks that addr is host:port with a host and a port in
// [1, 65535]; field names it in the error, example shows one.
func checkDialAddr(field, network, addr, example string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return badConfig(field, addr, "must be host:port, e.g. "+example)
	}
	if p, err := net.LookupPort(network, port); err != nil || p == 0 {
		return badConfig(field, addr, "must have a port in [1, 65535]")
	}
	return nil
}
