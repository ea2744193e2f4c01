//go:build linux

package udpbatch

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// TestRecvSources: each datagram of a batch comes with the address and
// port it came from, over IPv4 and IPv6, and the lengths the kernel
// overwrote (the address's, the control buffer's: 0 when a datagram
// brought no control message, which would cut the next one's short)
// are restored before the next Recv.
func TestRecvSources(t *testing.T) {
	for _, local := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(local, func(t *testing.T) {
			rc := listenLocal(t, local)
			ms := make([]ipv4.Message, 4)
			for i := range ms {
				ms[i].Buffers = [][]byte{make([]byte, 64)}
				ms[i].OOB = make([]byte, 64)
			}
			h := NewHeaders(ms, true)
			raw, err := rc.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			to := rc.LocalAddr().(*net.UDPAddr)
			var senders []*net.UDPConn
			for range 3 {
				sc, err := net.DialUDP("udp", nil, to)
				if err != nil {
					t.Fatal(err)
				}
				defer sc.Close()
				senders = append(senders, sc)
			}
			_ = rc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for round := range 3 {
				want := map[netip.AddrPort]string{}
				for i, sc := range senders {
					msg := string(rune('a'+round)) + string(rune('0'+i))
					if _, err := sc.Write([]byte(msg)); err != nil {
						t.Fatal(err)
					}
					want[sc.LocalAddr().(*net.UDPAddr).AddrPort()] = msg
				}
				for len(want) > 0 {
					var n int
					var errno unix.Errno
					if err := raw.Read(func(fd uintptr) bool {
						n, errno = h.Recv(fd, ms)
						return errno != unix.EAGAIN
					}); err != nil {
						t.Fatal(err)
					}
					if errno != 0 {
						t.Fatal(errno)
					}
					for i := range n {
						b, from := ms[i].Buffers[0][:ms[i].N], h.From(i)
						if want[from] != string(b) {
							t.Fatalf("round %d: got %q from %v, want %v", round, b, from, want)
						}
						delete(want, from)
					}
				}
			}
			if err := raw.Control(func(fd uintptr) {
				if _, errno := h.Recv(fd, ms); errno != unix.EAGAIN {
					t.Errorf("Recv of an empty socket: %v, want EAGAIN", errno)
				}
			}); err != nil {
				t.Fatal(err)
			}
			for i := range h.hs {
				if hdr := h.hs[i].Hdr; hdr.Namelen != unix.SizeofSockaddrInet6 || int(hdr.Controllen) != len(ms[i].OOB) {
					t.Errorf("entry %d before a Recv: name length %d, control length %d (want %d, %d)",
						i, hdr.Namelen, hdr.Controllen, unix.SizeofSockaddrInet6, len(ms[i].OOB))
				}
			}
		})
	}
}

// listenLocal opens a UDP socket on local (an address of this host with
// port 0), closed when the test ends; it skips the test when the host
// has no such address (no IPv6).
func listenLocal(t *testing.T, local string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(local)))
	if err != nil {
		t.Skipf("no %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
