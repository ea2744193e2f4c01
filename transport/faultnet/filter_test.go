package faultnet

import (
	"net/netip"
	"testing"
	"time"
)

// TestFilterMatchesInjector: a Filter makes the same decisions as an
// Injector with the same Faults, reports through kept whether Push kept
// each datagram, and hands every datagram back with its own source.
func TestFilterMatchesInjector(t *testing.T) {
	faults := Faults{Seed: 5, Loss: 0.1, Duplicate: 0.05, Reorder: 0.05, Jitter: 30 * time.Microsecond, MaxHeld: 20}
	in := mustInjector(t, faults)
	f, err := NewFilter(faults)
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		i    int
		from netip.AddrPort
	}
	var want, got []out
	now := t0
	for i := range 5000 {
		now = now.Add(time.Microsecond)
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + i%3)}), uint16(i))
		before := in.Stats().Passed
		in.Push(now, datagram(i), testAddr)
		kept := f.Push(now, datagram(i), from)
		if kept != (in.Stats().Passed > before) {
			t.Fatalf("datagram %d: Push reported kept=%v, the Injector's Passed went %d → %d", i, kept, before, in.Stats().Passed)
		}
		if kept {
			// Every copy comes back with this source.
			want = append(want, out{i, from})
		}
		for {
			wd, wok := in.NextDue()
			gd, gok := f.NextDue()
			if wok != gok || !wd.Equal(gd) {
				t.Fatalf("NextDue: Filter %v %v, Injector %v %v", gd, gok, wd, wok)
			}
			b, _, ok := in.Pop(now)
			gb, from, gok2 := f.Pop(now)
			if ok != gok2 {
				t.Fatalf("Pop: Filter %v, Injector %v", gok2, ok)
			}
			if !ok {
				break
			}
			if index(b) != index(gb) {
				t.Fatalf("Pop: Filter gave %d, Injector %d", index(gb), index(b))
			}
			got = append(got, out{index(gb), from})
		}
	}
	if f.Stats() != in.Stats() {
		t.Fatalf("stats: Filter %+v, Injector %+v", f.Stats(), in.Stats())
	}
	st := f.Stats()
	if st.Dropped == 0 || st.Duplicated == 0 || st.Reordered == 0 || st.Overflow == 0 {
		t.Fatalf("not every fault happened: %+v", st)
	}
	// got is in due order; each source must be the one pushed with
	// that index.
	sources := map[int]netip.AddrPort{}
	for _, w := range want {
		sources[w.i] = w.from
	}
	for _, g := range got {
		if s, ok := sources[g.i]; !ok || s != g.from {
			t.Fatalf("datagram %d came back from %v, pushed from %v (kept %v)", g.i, g.from, s, ok)
		}
	}
}

func TestFilterBadFaults(t *testing.T) {
	if _, err := NewFilter(Faults{Loss: 2}); err == nil {
		t.Fatal("NewFilter took Loss 2")
	}
}

// TestFilterSteadyStateDoesNotAllocate: with warm buffers, Push and Pop
// allocate nothing, as a subscriber's receive path needs.
func TestFilterSteadyStateDoesNotAllocate(t *testing.T) {
	f, err := NewFilter(Faults{Seed: 1, Loss: 0.01, Duplicate: 0.01, Reorder: 0.01, Jitter: 20 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddrPort("127.0.0.1:9")
	b := make([]byte, 1200)
	now := t0
	step := func() {
		now = now.Add(5 * time.Microsecond)
		f.Push(now, b, from)
		for {
			if _, _, ok := f.Pop(now); !ok {
				break
			}
		}
	}
	for range 10_000 {
		step()
	}
	if n := testing.AllocsPerRun(10_000, step); n != 0 {
		t.Fatalf("Push+Pop allocate %v times per datagram in steady state", n)
	}
}
