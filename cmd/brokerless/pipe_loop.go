package main

import (
	"cmp"
	"net"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerless/brokerless/multicast"
	"github.com/brokerless/brokerless/transport/kafka"
	"github.com/brokerless/brokerless/transport/zmq"
)

// pipeLoop reports whether a pipe from the URL from to the URL to would
// read back what it writes, and write it again, without end: the same
// topic of the same brokers (logd:// and kafka:// alike), partitions
// that overlap; the same multicast group, port, feed and interface; the
// same ZeroMQ endpoints (TO binds what FROM connects to). It compares
// what the transports parse the URLs into, so the spelling does not
// matter — default parameters given or left out, a host name's case, a
// port's leading zeros, an IP address's form — but host names are not
// resolved: localhost and 127.0.0.1 are two places.
func pipeLoop(from, to string) bool {
	f, err1 := url.Parse(from)
	t, err2 := url.Parse(to)
	if err1 != nil || err2 != nil || schemeFamily(f.Scheme) != schemeFamily(t.Scheme) {
		return false
	}
	switch schemeFamily(f.Scheme) {
	case "kafka":
		fc, err1 := kafka.ParseURL(f)
		tc, err2 := kafka.ParseURL(t)
		return err1 == nil && err2 == nil && fc.Topic == tc.Topic &&
			sameSet(fc.Brokers, tc.Brokers, hostPort) && overlap(fc.Partitions, tc.Partitions)
	case "mcast":
		fc, err1 := multicast.ParseURL(f)
		tc, err2 := multicast.ParseURL(t)
		return err1 == nil && err2 == nil && fc.Group == tc.Group &&
			cmp.Or(fc.Feed, multicast.DefaultFeed) == cmp.Or(tc.Feed, multicast.DefaultFeed) &&
			cmp.Or(fc.Interface, multicast.DefaultInterface) == cmp.Or(tc.Interface, multicast.DefaultInterface)
	case zmq.SchemeTCP, zmq.SchemeIPC:
		fc, err1 := zmq.ParseURL(f)
		tc, err2 := zmq.ParseURL(t)
		return err1 == nil && err2 == nil && sameSet(fc.Endpoints, tc.Endpoints, zmqEndpoint)
	}
	return false
}

// schemeFamily names the transport a scheme opens: logd:// and kafka://
// are one.
func schemeFamily(scheme string) string {
	if s := strings.ToLower(scheme); s != "logd" {
		return s
	}
	return "kafka"
}

// sameSet reports whether a and b hold the same elements, in any order,
// once each is spelt as norm spells it.
func sameSet(a, b []string, norm func(string) string) bool {
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i, s := range a {
		as[i] = norm(s)
	}
	for i, s := range b {
		bs[i] = norm(s)
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(slices.Compact(as), slices.Compact(bs))
}

// overlap reports whether two partition lists share a partition; an
// empty one is every partition.
func overlap(a, b []int32) bool {
	return len(a) == 0 || len(b) == 0 || slices.ContainsFunc(a, func(p int32) bool { return slices.Contains(b, p) })
}

// hostPort spells a HOST:PORT one way: an IP address in its canonical
// form, a host name in lower case without a trailing dot, the port
// without leading zeros.
func hostPort(hp string) string {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return strings.ToLower(hp)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	} else {
		host = strings.TrimSuffix(strings.ToLower(host), ".")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err == nil {
		port = strconv.FormatUint(n, 10)
	}
	return net.JoinHostPort(host, port)
}

// zmqEndpoint spells a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH) one
// way: its HOST:PORT as hostPort does, its path cleaned.
func zmqEndpoint(e string) string {
	if hp, ok := strings.CutPrefix(e, "tcp://"); ok {
		return "tcp://" + hostPort(hp)
	}
	if p, ok := strings.CutPrefix(e, "ipc://"); ok {
		return "ipc://" + path.Clean(p)
	}
	return e
}
