package reliable

import (
	"math/rand/v2"
	"testing"
)

// TestWindowArena: the window's datagrams share one arena, used as a
// ring, and no datagram ever overwrites another one the window still
// holds, whatever their sizes, nor the one being filled: each datagram
// is filled with a pattern of its own and every held datagram is
// checked after each step. The arena is made once; opening and closing
// datagrams then allocates nothing.
func TestWindowArena(t *testing.T) {
	const mtu = 200
	for _, tc := range []struct{ slots, bytes int }{
		{64, 16 * mtu},   // the byte bound binds
		{16, 64 * mtu},   // the slot bound binds
		{32, 32*mtu + 7}, // neither a multiple of the other
	} {
		w := newWindow(tc.slots, tc.bytes, mtu)
		rng := rand.New(rand.NewPCG(1, uint64(tc.slots)))
		var first uint64 = 1 // first field of the next datagram: its pattern seed
		fill := func(d *sent, n int) {
			for range n {
				d.buf = append(d.buf, byte(d.first)+byte(len(d.buf)*7))
			}
		}
		check := func(step int) {
			t.Helper()
			for i := 0; i < w.n; i++ {
				d := w.at(i)
				for j, b := range d.buf {
					if b != byte(d.first)+byte(j*7) {
						t.Fatalf("slots %d bytes %d, step %d: datagram %d of %d (first %d, %d bytes) overwritten at byte %d",
							tc.slots, tc.bytes, step, i, w.n, d.first, len(d.buf), j)
					}
				}
			}
		}
		for step := range 20_000 {
			d := w.open()
			if d == nil { // only unsent datagrams held: send some
				for range 1 + rng.IntN(w.unsent) {
					w.takeUnsent()
				}
				continue
			}
			d.first = first
			first++
			size := mtu
			if rng.IntN(4) > 0 {
				size = 1 + rng.IntN(mtu)
			}
			fill(d, size/2)
			check(step) // the open datagram overwrote nothing held
			fill(d, size-size/2)
			w.close()
			if cap(d.buf) > mtu {
				t.Fatalf("a datagram's buffer holds %d bytes, more than the MTU", cap(d.buf))
			}
			check(step)
			if rng.IntN(3) > 0 {
				w.takeUnsent()
			}
		}
	}

	w := newWindow(64, 16*mtu, mtu)
	cycle := func() {
		d := w.open()
		if d == nil {
			t.Fatal("open refused with everything sent")
		}
		d.buf = append(d.buf, make([]byte, 100)...)
		w.close()
		w.takeUnsent()
	}
	cycle()
	if allocs := testing.AllocsPerRun(1000, cycle); allocs != 0 {
		t.Fatalf("%v allocations per datagram once the arena exists", allocs)
	}
}
