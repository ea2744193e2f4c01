package faultnet

import (
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// listenUDP opens a UDP socket on 127.0.0.1, closed when the test ends.
func listenUDP(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustPacketConn(t *testing.T, c net.PacketConn, cfg Config) *PacketConn {
	t.Helper()
	pc, err := NewPacketConn(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// waitFor polls cond until it holds or the timeout passes. It is for
// conditions no event announces, such as goroutines having exited.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// recordConn is an in-memory net.PacketConn that records what is written
// to it. Reads fail.
type recordConn struct {
	mu  sync.Mutex
	got [][]byte
}

func (r *recordConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, append([]byte(nil), p...))
	return len(p), nil
}

func (r *recordConn) written() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got...)
}

func (r *recordConn) ReadFrom([]byte) (int, net.Addr, error) { return 0, nil, net.ErrClosed }
func (r *recordConn) Close() error                           { return nil }
func (r *recordConn) LocalAddr() net.Addr                    { return testAddr }
func (r *recordConn) SetDeadline(time.Time) error            { return nil }
func (r *recordConn) SetReadDeadline(time.Time) error        { return nil }
func (r *recordConn) SetWriteDeadline(time.Time) error       { return nil }

// countGoroutines counts the live goroutines started by fn.
func countGoroutines(fn string) int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "created by github.com/brokerless/brokerless/transport/"+fn+" ")
}
