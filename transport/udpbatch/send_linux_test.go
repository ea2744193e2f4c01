//go:build linux

package udpbatch

import (
	"net"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// TestSendBatch: one sendmmsg sends each entry to its own destination,
// over IPv4 and IPv6, an entry's buffers joined into one datagram; a
// second, smaller batch reuses the headers, and a destination of
// another kind is refused.
func TestSendBatch(t *testing.T) {
	for _, local := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(local, func(t *testing.T) {
			rcs := []*net.UDPConn{listenLocal(t, local), listenLocal(t, local)}
			for _, rc := range rcs {
				_ = rc.SetReadDeadline(time.Now().Add(10 * time.Second))
			}
			sc := listenLocal(t, local)
			raw, err := sc.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var h SendHeaders
			send := func(ms []ipv4.Message) (n int, errno unix.Errno) {
				if err := raw.Write(func(fd uintptr) bool {
					n, errno = h.Send(fd, ms, unix.MSG_DONTWAIT)
					return errno != unix.EAGAIN
				}); err != nil {
					t.Fatal(err)
				}
				return n, errno
			}
			ms := []ipv4.Message{
				{Buffers: [][]byte{[]byte("one")}, Addr: rcs[0].LocalAddr()},
				{Buffers: [][]byte{[]byte("tw"), []byte("o")}, Addr: rcs[1].LocalAddr()},
				{Buffers: [][]byte{[]byte("three")}, Addr: rcs[0].LocalAddr()},
			}
			if n, errno := send(ms); n != 3 || errno != 0 {
				t.Fatalf("sent %d (%v), want 3", n, errno)
			}
			if n, errno := send(ms[1:2]); n != 1 || errno != 0 {
				t.Fatalf("sent %d (%v), want 1", n, errno)
			}
			if ms[1].N != 3 {
				t.Fatalf("entry 1 sent %d bytes, want 3", ms[1].N)
			}
			want := [][]string{{"one", "three"}, {"two", "two"}}
			buf := make([]byte, 64)
			for i, rc := range rcs {
				for _, w := range want[i] {
					n, from, err := rc.ReadFromUDPAddrPort(buf)
					if err != nil {
						t.Fatal(err)
					}
					if string(buf[:n]) != w || from.Port() != sc.LocalAddr().(*net.UDPAddr).AddrPort().Port() {
						t.Fatalf("receiver %d got %q from %v, want %q from %v", i, buf[:n], from, w, sc.LocalAddr())
					}
				}
			}
			bad := []ipv4.Message{{Buffers: [][]byte{[]byte("x")}, Addr: &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)}}}
			if n, errno := send(bad); n != 0 || errno != unix.EAFNOSUPPORT {
				t.Fatalf("a non-UDP destination: sent %d (%v), want EAFNOSUPPORT", n, errno)
			}
		})
	}
}
