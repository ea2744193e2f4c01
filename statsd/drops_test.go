package statsd

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDropReaderWraps: the kernel's drops counter of a socket is 32
// bits (sk_drops, an atomic_t) and starts again from 0 after 2^32-1;
// the drops of an interval across the wrap are counted all the same,
// each socket's on its own.
func TestDropReaderWraps(t *testing.T) {
	var d dropReader
	steps := []struct {
		readings map[uint64]uint32
		want     uint64
	}{
		{map[uint64]uint32{7: 10, 8: 1 << 31}, 10 + 1<<31},
		{map[uint64]uint32{7: 4294967290, 8: 1<<31 + 3}, 4294967280 + 3},
		{map[uint64]uint32{7: 5, 8: 1<<31 + 3}, 11},          // 7 wrapped: 6 to 2^32, 5 after
		{map[uint64]uint32{7: 5, 8: 2}, 1<<31 - 3 + 2},       // 8 wrapped
		{map[uint64]uint32{7: 4294967295, 8: 2}, 4294967290}, // no wrap: 7 went up
		{map[uint64]uint32{7: 0, 8: 2}, 1},                   // 7 wrapped onto 0
		{map[uint64]uint32{7: 0, 8: 2}, 0},
	}
	for i, st := range steps {
		if got := d.update(st.readings); got != st.want {
			t.Errorf("update %d (%v): drops = %d, want %d", i, st.readings, got, st.want)
		}
	}
}

// TestScanUDPDrops reads the drops column of a /proc/net/udp table: as
// current kernels print it (%u, up to 2^32-1), and as older ones did
// (%d: negative past 2^31-1), both the counter's 32 bits.
func TestScanUDPDrops(t *testing.T) {
	table := `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 0100007F:1F90 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 101 2 0000000000000000 4294967295
  2: 0100007F:1F91 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 102 2 0000000000000000 -2
  3: 0100007F:1F92 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 103 2 0000000000000000 17
  4: 0100007F:1F93 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 104 2 0000000000000000 9
`
	got := map[uint64]uint32{}
	scanUDPDrops(strings.NewReader(table), func(_ []byte, inode uint64) bool { return inode != 104 },
		func(inode uint64, drops uint32) { got[inode] = drops })
	want := map[uint64]uint32{101: 4294967295, 102: 4294967294, 103: 17}
	if len(got) != len(want) {
		t.Errorf("readings = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("socket %d: drops = %d, want %d", k, got[k], v)
		}
	}
}

// TestDropCountsSince: the drops between two readings of a port's
// sockets are each socket's counter less its earlier one, modulo 2^32:
// a counter that wrapped is not a huge number of drops, and a socket
// that closed, or opened, between the readings neither takes drops
// away nor adds its earlier ones again.
func TestDropCountsSince(t *testing.T) {
	for _, tc := range []struct {
		name           string
		earlier, later DropCounts
		want           uint64
	}{
		{"same sockets", DropCounts{1: 10, 2: 20}, DropCounts{1: 15, 2: 21}, 6},
		{"a counter wrapped", DropCounts{1: 4294967290, 2: 20}, DropCounts{1: 3, 2: 21}, 10},
		{"a socket closed", DropCounts{1: 10, 2: 1000}, DropCounts{1: 15}, 5},
		{"a socket opened", DropCounts{1: 10}, DropCounts{1: 15, 3: 7}, 12},
		{"a socket replaced", DropCounts{1: 500}, DropCounts{4: 2}, 2},
		{"nothing then", nil, DropCounts{1: 3}, 3},
	} {
		if got := tc.later.Since(tc.earlier); got != tc.want {
			t.Errorf("%s: %v since %v = %d, want %d", tc.name, tc.later, tc.earlier, got, tc.want)
		}
	}
}

// TestPortDropsReadsSocket: PortDrops finds a socket bound to the port,
// by its inode.
func TestPortDropsReadsSocket(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inode := socketInode(c)
	got := PortDrops(c.LocalAddr().(*net.UDPAddr).Port)
	if _, ok := got[inode]; !ok {
		t.Errorf("PortDrops = %v, want socket %d's counter among them", got, inode)
	}
}

// TestDropReaderMissedReading: a flush that could not read a socket's
// counter (the table unreadable: out of file descriptors) counts none
// of its drops, and the next counts them once, not the socket's whole
// history again.
func TestDropReaderMissedReading(t *testing.T) {
	var d dropReader
	for i, st := range []struct {
		readings DropCounts
		want     uint64
	}{
		{DropCounts{7: 100, 8: 50}, 150},
		{DropCounts{}, 0},
		{DropCounts{7: 103}, 3},
		{DropCounts{7: 104, 8: 51}, 2},
	} {
		if got := d.update(st.readings); got != st.want {
			t.Errorf("update %d (%v): drops = %d, want %d", i, st.readings, got, st.want)
		}
	}
}

// TestCloseCountsLastDrops: the final flush of Close reports the kernel
// drops of its interval. Close closes the sockets first, and a closed
// socket leaves /proc/net/udp, so read then, its drops were never
// reported. (The dropping socket here is the test's, which nothing
// reads, put among the server's.)
func TestCloseCountsLastDrops(t *testing.T) {
	var final atomic.Uint64
	s, err := NewServer(t.Context(), Config{TCP: []string{"127.0.0.1:0"},
		Backends: []Backend{funcBackend{name: "record", flush: func(_ context.Context, snap *Snapshot) error {
			final.Store(snap.Server.Listen.KernelDrops)
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	_ = c.SetReadBuffer(1) // the kernel's least: a few datagrams
	r := &udpReader{conn: c, inode: socketInode(c), cfg: &s.cfg}
	s.udp = append(s.udp, r)
	s.drops.add(r.inode)
	port := c.LocalAddr().(*net.UDPAddr).Port
	w, err := net.Dial("udp", c.LocalAddr().String())
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	defer w.Close()
	deadline := time.Now().Add(10 * time.Second)
	var dropped uint32
	for dropped < 10 {
		if time.Now().After(deadline) {
			s.Close()
			t.Fatalf("the socket dropped %d datagrams, want 10", dropped)
		}
		_, _ = w.Write([]byte("drop.me:1|c"))
		dropped = PortDrops(port)[r.inode]
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := final.Load(); got < uint64(dropped) {
		t.Errorf("the final flush reported %d kernel drops, want at least the %d counted before Close", got, dropped)
	}
}
