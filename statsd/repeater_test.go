package statsd

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRepeaterCloseWithStuckTarget: a TCP target that accepts and then
// never reads (a stopped process) holds no write for longer than
// WriteTimeout, so Close returns, and every packet is either sent or
// counted as dropped.
func TestRepeaterCloseWithStuckTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // never read
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	r, err := NewRepeater(context.Background(), RepeaterConfig{Targets: []string{ln.Addr().String()}, Protocol: "tcp",
		WriteTimeout: 200 * time.Millisecond, QueueBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// Far more than the socket buffers of both ends hold.
	packet := []byte(strings.Repeat("stuck.target:1|c\n", 4000))
	const n = 1000
	for range n {
		r.Packet(packet)
	}
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- r.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("Close still blocked after 10s: the repeater waits for ever on a target that does not read")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v with WriteTimeout 200ms", d)
	}
	sent, dropped := r.counts()
	if sent+dropped != n || dropped == 0 {
		t.Errorf("sent %d + dropped %d, want %d packets in all, some dropped", sent, dropped, n)
	}
}
