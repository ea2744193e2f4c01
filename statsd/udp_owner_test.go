package statsd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A second server on a UDP port that a server already reads is refused,
// however many readers either has and whichever overlapping address it
// asks for, and the first one keeps receiving every datagram.
func TestSecondServerOnUDPPortRefused(t *testing.T) {
	for _, first := range []int{2, 1} {
		cfg := Config{UDP: []string{"127.0.0.1:0"}, UDPReaders: first}
		cfg.FlushInterval = time.Hour
		a := startServer(t, cfg)
		port := strconv.Itoa(a.UDPAddrs()[0].(*net.UDPAddr).Port)
		for _, second := range []struct {
			readers int
			addr    string
		}{{2, "127.0.0.1:" + port}, {1, "127.0.0.1:" + port}, {2, "0.0.0.0:" + port}, {2, ":" + port}, {4, "[::]:" + port}} {
			t.Run(fmt.Sprintf("%d then %d on %s", first, second.readers, second.addr), func(t *testing.T) {
				cfg := Config{UDP: []string{second.addr}, UDPReaders: second.readers}
				cfg.FlushInterval = time.Hour
				b, err := NewServer(context.Background(), cfg)
				if err == nil {
					b.Close()
					t.Fatal("a second server started on the port")
				}
				var inUse *AddrInUseError
				if !errors.As(err, &inUse) || !errors.Is(err, ErrAddrInUse) || inUse.Network != "udp" || inUse.Addr == "" {
					t.Fatalf("error %v (%T), want an AddrInUseError", err, err)
				}
				if _, p, _ := net.SplitHostPort(inUse.Addr); p != port {
					t.Fatalf("error names %q, not port %s", inUse.Addr, port)
				}
				if inUse.PID != os.Getpid() {
					t.Errorf("error names process %d, want %d (this one)", inUse.PID, os.Getpid())
				}
			})
		}
		before, _ := a.Received()
		packets := make([]string, 200)
		for i := range packets {
			packets[i] = fmt.Sprintf("p%d:1|c", i)
		}
		sendUDP(t, a.UDPAddrs()[0].String(), packets...)
		waitReceived(t, a, int(before)+len(packets), 0)
	}
}

// The check after binding: a socket of the same user that joined the
// port's SO_REUSEPORT group is found, whatever its family; the server's
// own are not.
func TestForeignUDPSocketFound(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "::1"} {
		t.Run(ip, func(t *testing.T) {
			lc := net.ListenConfig{Control: reusePort}
			pc, err := lc.ListenPacket(context.Background(), "udp", net.JoinHostPort(ip, "0"))
			if err != nil {
				t.Skipf("no %s: %v", ip, err)
			}
			defer pc.Close()
			mine, err := lc.ListenPacket(context.Background(), "udp", pc.LocalAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer mine.Close()
			addr := mine.LocalAddr().(*net.UDPAddr)
			ours := map[uint64]bool{socketInode(mine.(*net.UDPConn)): true}
			err = checkUDPAlone(addr, ours)
			var inUse *AddrInUseError
			if !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
				t.Fatalf("another socket on %v: %v, want an AddrInUseError naming this process", addr, err)
			}
			ours[socketInode(pc.(*net.UDPConn))] = true
			if err := checkUDPAlone(addr, ours); err != nil {
				t.Fatalf("only our sockets on %v: %v", addr, err)
			}
		})
	}
}

func TestUDPAddressesOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.2", false},
		{"0.0.0.0", "127.0.0.1", true},
		{"::", "127.0.0.1", true},
		{"::", "::1", true},
		{"0.0.0.0", "::1", false},
		{"::ffff:127.0.0.1", "127.0.0.1", true},
		{"0.0.0.0", "::ffff:127.0.0.1", true},
		{"::1", "127.0.0.1", false},
	}
	for _, c := range cases {
		a, b := net.ParseIP(c.a), net.ParseIP(c.b)
		if got := overlap(a, b); got != c.want {
			t.Errorf("overlap(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := overlap(b, a); got != c.want {
			t.Errorf("overlap(%s, %s) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

// A second server on a unix datagram socket in use is refused; a stale
// socket file left by a server that is gone is replaced.
func TestSecondServerOnUnixgramRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "statsd.sock")
	cfg := Config{Unixgram: []string{path}}
	cfg.FlushInterval = time.Hour
	a := startServer(t, cfg)
	_, err := NewServer(context.Background(), cfg)
	var inUse *AddrInUseError
	if !errors.As(err, &inUse) || inUse.Network != "unixgram" || inUse.Addr != path {
		t.Fatalf("second server on %s: %v, want an AddrInUseError", path, err)
	}
	u, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.Write([]byte("still:1|c")); err != nil {
		t.Fatal(err)
	}
	waitReceived(t, a, 1, 0)

	stale := filepath.Join(t.TempDir(), "stale.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: stale, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("no stale socket file: %v", err)
	}
	cfg.Unixgram = []string{stale}
	startServer(t, cfg)
}
