package statsd

import (
	"strings"
	"testing"
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
