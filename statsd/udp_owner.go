package statsd

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// Why a UDP port is checked for other sockets: the kernel lets every
// socket of one user join a port's SO_REUSEPORT group, then spreads the
// datagrams across the group. A second server started on the port by the
// same user would silently take part of the traffic from the first. So
// when listenUDP opens several readers (SO_REUSEPORT) it makes sure, from
// the kernel's own list of UDP sockets (/proc/net/udp and
// /proc/net/udp6, by inode), that no socket but the server's receives on
// the port: once before binding, so a running server is not disturbed,
// and once after, for two servers that start at the same moment (both
// then refuse). With one reader it sets no SO_REUSEPORT, and the kernel
// itself refuses a second socket on the port.

// errNoSocketList: /proc/net/udp and /proc/net/udp6 cannot be read.
var errNoSocketList = errors.New("cannot read /proc/net/udp to check that no other process shares the port; use one UDP reader")

// udpSocket is a line of /proc/net/udp or /proc/net/udp6.
type udpSocket struct {
	ip    net.IP
	port  int
	inode uint64
}

// udpSockets lists the UDP sockets bound to port.
func udpSockets(port int) ([]udpSocket, error) {
	out, ok := procSockets([]string{"/proc/net/udp", "/proc/net/udp6"}, port, "")
	if !ok {
		return nil, errNoSocketList
	}
	return out, nil
}

// procSockets lists the sockets bound to port in the kernel's socket
// tables files (/proc/net/udp, tcp, and their IPv6 twins) whose state
// (hexadecimal, as the tables write it; "" for any) is state; ok is
// false when none of the files could be read.
func procSockets(files []string, port int, state string) (out []udpSocket, ok bool) {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		ok = true
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Scan() // header
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
			f := bytes.Fields(sc.Bytes())
			if len(f) < 10 || (state != "" && string(f[3]) != state) {
				continue
			}
			s, good := parseProcAddr(f[1])
			if !good || s.port != port {
				continue
			}
			if s.inode, err = strconv.ParseUint(string(f[9]), 10, 64); err == nil {
				out = append(out, s)
			}
		}
	}
	return out, ok
}

// parseProcAddr reads "0100007F:1F95": the address as 32-bit words in
// the kernel's byte order, then the port, in hexadecimal.
func parseProcAddr(b []byte) (udpSocket, bool) {
	addr, port, ok := bytes.Cut(b, []byte{':'})
	if !ok || (len(addr) != 8 && len(addr) != 32) {
		return udpSocket{}, false
	}
	raw := make([]byte, len(addr)/2)
	if _, err := hex.Decode(raw, addr); err != nil {
		return udpSocket{}, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	p, err := strconv.ParseUint(string(port), 16, 16)
	if err != nil {
		return udpSocket{}, false
	}
	return udpSocket{ip: ip, port: int(p)}, true
}

// overlap: sockets bound to a and b on one port could receive the same
// datagrams.
func overlap(a, b net.IP) bool {
	return a.Equal(b) || covers(a, b) || covers(b, a)
}

// covers: a wildcard address w receives what is sent to x. An IPv6
// wildcard is counted as dual-stack, which Go's is.
func covers(w, x net.IP) bool {
	return w.IsUnspecified() && (w.To4() == nil || x.To4() != nil)
}

// foreignUDP returns a socket bound to addr's port, with an address
// overlapping addr's, that is not among ours. No IP is the wildcard.
func foreignUDP(addr *net.UDPAddr, ours map[uint64]bool) (udpSocket, bool, error) {
	socks, err := udpSockets(addr.Port)
	if err != nil {
		return udpSocket{}, false, err
	}
	ip := addr.IP
	if ip == nil {
		ip = net.IPv6unspecified
	}
	for _, s := range socks {
		if !ours[s.inode] && overlap(s.ip, ip) {
			return s, true, nil
		}
	}
	return udpSocket{}, false, nil
}

// socketOwner returns the id of a process holding the socket of inode,
// found among the processes whose descriptors we may read, or 0.
func socketOwner(inode uint64) int {
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && link == want {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(fd))))
			return pid
		}
	}
	return 0
}
