package multicast

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestSendSocketLeavesNacksToReader: on Linux the publisher sends from a
// second socket on its address (sendsock_linux.go); every datagram for
// that address, from whichever source, still reaches the socket the
// publisher reads NACKs from. 64 sources send one datagram each (not a
// NACK: the publisher counts it as foreign); without the reuseport
// group's program the kernel spreads them over both sockets by a hash
// of their source, and about half are never read.
func TestSendSocketLeavesNacksToReader(t *testing.T) {
	p := mustPub(t, testConfig(t))
	if runtime.GOOS == "linux" && p.send == nil {
		t.Fatal("no send socket on Linux")
	}
	const sources = 64
	to := net.UDPAddrFromAddrPort(p.LocalAddr())
	for range sources {
		c, err := net.DialUDP("udp4", nil, to)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("not a NACK, but for the publisher")); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := p.Stats()
		got := st.Foreign + st.Malformed
		if got == sources {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the publisher read %d of %d datagrams sent to its address", got, sources)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
