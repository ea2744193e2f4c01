package multicast

import (
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestReadNowPastDeadline: a read whose deadline has passed returns at
// once without looking at the socket, so a reader woken late (a loaded
// machine) would run its timers with datagrams waiting unread: a NACK
// confirmation among them then comes after the NACK it should have
// cancelled. readNow looks: it returns what waits, and 0 once the
// socket is empty.
func TestReadNowPastDeadline(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("readNow reads only where recvmmsg is")
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rb, err := newReadBatch(c, 8, maxDatagram, false)
	if err != nil {
		t.Fatal(err)
	}
	w, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, m := range []string{"one", "two"} {
		if _, err := w.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // both in the socket
	if err := c.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := rb.read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %d entries, %v; want the timeout (the case readNow is for)", n, err)
	}
	n, err := rb.readNow()
	if err != nil || n != 2 {
		t.Fatalf("readNow: %d entries, %v; want 2", n, err)
	}
	for i, want := range []string{"one", "two"} {
		if b, from := rb.datagram(i); string(b) != want || from.Port() != uint16(w.LocalAddr().(*net.UDPAddr).Port) {
			t.Fatalf("entry %d: %q from %v", i, b, from)
		}
	}
	if n, err := rb.readNow(); n != 0 || err != nil {
		t.Fatalf("readNow of an empty socket: %d entries, %v; want 0, nil", n, err)
	}
}
