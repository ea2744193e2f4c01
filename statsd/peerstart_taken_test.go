package statsd

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// takenPorts is a portPicker whose nth pick of one network ("udp" or
// "tcp") is a port the test holds bound: as if another process took it
// between freeUDPPort or freeTCPPort and the peer's bind. Every other
// pick is free. It counts the picks.
type takenPorts struct {
	network string
	nth     int
	port    int // the taken one
	picks   map[string]int
}

func newTakenPorts(t *testing.T, network string, nth int) *takenPorts {
	t.Helper()
	tp := &takenPorts{network: network, nth: nth, picks: make(map[string]int)}
	var c io.Closer
	switch network {
	case "udp":
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, tp.port = pc, pc.LocalAddr().(*net.UDPAddr).Port
	case "tcp":
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, tp.port = ln, ln.Addr().(*net.TCPAddr).Port
	}
	t.Cleanup(func() { c.Close() })
	return tp
}

func (tp *takenPorts) picker() portPicker {
	pick := func(network string, free func(testing.TB) int) func(testing.TB) int {
		return func(t testing.TB) int {
			tp.picks[network]++
			if network == tp.network && tp.picks[network] == tp.nth {
				return tp.port
			}
			return free(t)
		}
	}
	return portPicker{udp: pick("udp", freeUDPPort), tcp: pick("tcp", freeTCPPort)}
}

// check: the peer was started again (a second set of ports was picked),
// uses none of the taken port, and holds the ports it uses.
func (tp *takenPorts) check(t *testing.T, perStart int, pid int, udp []int, tcp []int) {
	t.Helper()
	if tp.picks[tp.network] <= perStart {
		t.Errorf("%d %s ports picked: the peer was not started again after finding port %d taken", tp.picks[tp.network], tp.network, tp.port)
	}
	for _, p := range udp {
		if _, ok := heldUDP(t, pid, p); !ok || (tp.network == "udp" && p == tp.port) {
			t.Errorf("the peer (PID %d) uses UDP port %d, which it does not hold (the test holds %s port %d)", pid, p, tp.network, tp.port)
		}
	}
	for _, p := range tcp {
		if !heldTCPListener(t, pid, p) || (tp.network == "tcp" && p == tp.port) {
			t.Errorf("the peer (PID %d) uses TCP port %d, on which it does not listen (the test holds %s port %d)", pid, p, tp.network, tp.port)
		}
	}
}

// TestEtsyStartPortTaken: when the UDP or the management port picked
// for Etsy is taken by another socket (the test's), Etsy still says
// "server is up", then exits; startEtsy starts it again on other ports,
// and the Etsy it returns holds its ports and counts what is sent to
// its address (and, with etsyRcvbufJS loaded, has said its socket's
// receive buffer).
func TestEtsyStartPortTaken(t *testing.T) {
	for _, c := range []struct {
		network string
		rcvbuf  int
	}{{"udp", etsyRcvbufUntouched}, {"tcp", etsyRcvbufUntouched}, {"udp", 0}} {
		t.Run(fmt.Sprintf("%s rcvbuf=%d", c.network, c.rcvbuf), func(t *testing.T) {
			tp := newTakenPorts(t, c.network, 1)
			sink := newGraphiteSink(t)
			e := startEtsyOn(t, tp.picker(), map[string]any{"flushInterval": 1000, "graphiteHost": "127.0.0.1", "graphitePort": sink.port()},
				c.rcvbuf)
			tp.check(t, 1, e.proc.pid(), []int{e.port}, []int{e.mgmt})
			if c.rcvbuf != etsyRcvbufUntouched && e.rcvbuf <= 0 {
				t.Errorf("Etsy's receive buffer: %d", e.rcvbuf)
			}
			sendUDP(t, e.addr(), "porttaken:1|c")
			for i := 0; ; i++ { // the first flush may come before the counter
				if m, _ := sink.next(t, "Etsy"); m["stats_counts.porttaken"] == "1" {
					break
				}
				if i == 5 {
					t.Fatal("Etsy's flushes have no stats_counts.porttaken 1")
				}
			}
		})
	}
}

// TestExporterStartPortTaken: when the UDP or the web port picked for
// statsd_exporter is taken by another socket (the test's), the exporter
// logs the bind error and exits; startExporter starts it again on
// other ports, and the exporter it returns holds its ports and counts
// what is sent to its address.
func TestExporterStartPortTaken(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			tp := newTakenPorts(t, network, 1)
			x := startExporterOn(t, tp.picker(), 0)
			tp.check(t, 1, x.proc.pid(), []int{x.port}, []int{x.webPort})
			if x.rcvbuf <= 0 {
				t.Errorf("statsd_exporter's receive buffer: %d", x.rcvbuf)
			}
			sendUDP(t, x.addr(), "bench.k1:1|c")
			deadline := time.Now().Add(20 * time.Second)
			for {
				n, err := x.total()
				if err == nil && n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("statsd_exporter counts %d (%v), want 1", n, err)
				}
				time.Sleep(20 * time.Millisecond) // polling its /metrics: no event to wait on
			}
		})
	}
}

// TestCarbonStartPortTaken: when carbon's line, pickle or query port is
// taken by another socket (the test's), carbon exits; startCarbon
// starts it again on other ports, and the carbon it returns listens on
// all three. (The pickle port is bound after carbon announces its line
// port, so waiting for that one alone could return a carbon about to
// exit.)
func TestCarbonStartPortTaken(t *testing.T) {
	for nth, port := range []string{"line", "pickle", "query"} {
		t.Run(port, func(t *testing.T) {
			tp := newTakenPorts(t, "tcp", nth+1)
			c := startCarbonOn(t, tp.picker())
			tp.check(t, 3, c.proc.pid(), nil, []int{c.line, c.pickle, c.query})
		})
	}
}

// TestUDPRecvBufferOfItsSocket: udpRecvBuffer reads the buffer of the
// socket asked for (by inode), not of another socket on the same port.
func TestUDPRecvBufferOfItsSocket(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss (iproute2) not installed")
	}
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	port := a.LocalAddr().(*net.UDPAddr).Port
	b, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: port})
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	defer b.Close()
	// Two sockets on one port, with different buffers: each is read as
	// its own, whichever ss lists first.
	if err := a.SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	if err := b.SetReadBuffer(96 << 10); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*net.UDPConn{a, b} {
		got, err := udpRecvBuffer(port, socketInode(c))
		if err != nil {
			t.Fatal(err)
		}
		if want := 2 * recvBuffer(c); got != want {
			t.Errorf("%s: udpRecvBuffer %d, want its SO_RCVBUF %d", c.LocalAddr(), got, want)
		}
	}
}

// TestHeldPortsAreThePeers: a socket on the port counts as the peer's
// only when the peer's PID holds it: the test's own sockets are found
// held by the test's PID and not by a peer's.
func TestHeldPortsAreThePeers(t *testing.T) {
	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	udp, tcp := u.LocalAddr().(*net.UDPAddr).Port, ln.Addr().(*net.TCPAddr).Port
	peer := runPeer(t, "sleep", exec.Command("sleep", "600"), 0)
	for _, c := range []struct {
		who  string
		pid  int
		want bool
	}{{"the test", os.Getpid(), true}, {"a peer", peer.pid(), false}} {
		if _, got := heldUDP(t, c.pid, udp); got != c.want {
			t.Errorf("%s (PID %d) holds UDP port %d: %v, want %v", c.who, c.pid, udp, got, c.want)
		}
		if got := heldTCPListener(t, c.pid, tcp); got != c.want {
			t.Errorf("%s (PID %d) listens on TCP port %d: %v, want %v", c.who, c.pid, tcp, got, c.want)
		}
	}
}
