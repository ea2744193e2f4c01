package main

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
)

// pipeLoop reports whether a pipe from the URL from to the URL to would
// read back what it writes, and write it again, without end: the same
// topic of the same brokers (logd:// and kafka:// alike), partitions
// that overlap; the same multicast group, port, feed and interface; the
// same ZeroMQ endpoints (TO binds what FROM connects to). It compares
// the URLs as written: two spellings of one host are not seen.
func pipeLoop(from, to string) bool {
	f, err1 := url.Parse(from)
	t, err2 := url.Parse(to)
	if err1 != nil || err2 != nil || schemeFamily(f.Scheme) != schemeFamily(t.Scheme) || !sameHosts(f.Host, t.Host) {
		return false
	}
	fq, tq := f.Query(), t.Query()
	switch schemeFamily(f.Scheme) {
	case "kafka":
		fp, tp := fq.Get("partition"), tq.Get("partition")
		return strings.Trim(f.Path, "/") == strings.Trim(t.Path, "/") && (fp == "" || tp == "" || fp == tp)
	case "mcast":
		return cmp.Or(fq.Get("feed"), "1") == cmp.Or(tq.Get("feed"), "1") && cmp.Or(fq.Get("iface"), "lo") == cmp.Or(tq.Get("iface"), "lo")
	case "zmq+tcp":
		return true
	case "zmq+ipc":
		return f.Path == t.Path
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

// sameHosts reports whether two URL hosts list the same addresses, in
// any order.
func sameHosts(a, b string) bool {
	as, bs := strings.Split(strings.ToLower(a), ","), strings.Split(strings.ToLower(b), ",")
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}
