package multicast

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestReadBatchSource checks that a batch read returns each datagram
// with the address and port it came from, and that the lengths the
// kernel overwrote are restored for the next read.
func TestReadBatchSource(t *testing.T) {
	rc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rb, err := newReadBatch(rc, 4, 64, false)
	if err != nil {
		t.Fatal(err)
	}
	to := rc.LocalAddr().(*net.UDPAddr)
	var senders []*net.UDPConn
	for range 3 {
		sc, err := net.DialUDP("udp4", nil, to)
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
			n, err := rb.read()
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				b, from := rb.datagram(i)
				if want[from] != string(b) {
					t.Fatalf("round %d: got %q from %v, want %v", round, b, from, want)
				}
				delete(want, from)
			}
		}
	}
}
