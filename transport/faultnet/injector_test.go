package faultnet

import (
	"bytes"
	"encoding/binary"
	"math"
	"net"
	"slices"
	"testing"
	"time"
)

var (
	t0       = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	testAddr = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
)

func mustInjector(t testing.TB, f Faults) *Injector {
	t.Helper()
	in, err := NewInjector(f)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// datagram i is its index as 8 bytes.
func datagram(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }

func index(b []byte) int { return int(binary.BigEndian.Uint64(b)) }

// delivery is one datagram popped, with the time it was due.
type delivery struct {
	i   int
	due time.Time
}

// run pushes n datagrams, one every step, popping whatever is due as the
// clock advances, then drains what is left. It returns the deliveries in
// order.
func run(t testing.TB, in *Injector, n int, step time.Duration) []delivery {
	t.Helper()
	var out []delivery
	pop := func(now time.Time) {
		for {
			due, held := in.NextDue()
			b, addr, ok := in.Pop(now)
			if ok != (held && !due.After(now)) {
				t.Fatalf("Pop(%v) ok=%v but NextDue = %v, %v", now, ok, due, held)
			}
			if !ok {
				return
			}
			if addr != testAddr {
				t.Fatalf("Pop returned address %v, want %v", addr, testAddr)
			}
			out = append(out, delivery{index(b), due})
		}
	}
	now := t0
	for i := range n {
		pop(now)
		in.Push(now, datagram(i), testAddr)
		pop(now)
		now = now.Add(step)
	}
	for {
		due, ok := in.NextDue()
		if !ok {
			return out
		}
		pop(due)
	}
}

func TestInjectorDeterministicBySeed(t *testing.T) {
	f := Faults{Seed: 42, Loss: 0.2, Duplicate: 0.1, Reorder: 0.1, Delay: time.Millisecond, Jitter: time.Millisecond}
	a := run(t, mustInjector(t, f), 10_000, 10*time.Microsecond)
	b := run(t, mustInjector(t, f), 10_000, 10*time.Microsecond)
	if !slices.Equal(a, b) {
		t.Fatal("same seed and input gave different deliveries")
	}
	f.Seed = 43
	c := run(t, mustInjector(t, f), 10_000, 10*time.Microsecond)
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same deliveries")
	}
}

func TestInjectorLossPatternIndependentOfOtherFaults(t *testing.T) {
	lost := func(f Faults) []int {
		seen := make([]bool, 5000)
		for _, d := range run(t, mustInjector(t, f), len(seen), time.Microsecond) {
			seen[d.i] = true
		}
		var l []int
		for i, ok := range seen {
			if !ok {
				l = append(l, i)
			}
		}
		return l
	}
	base := lost(Faults{Seed: 5, Loss: 0.3})
	more := lost(Faults{Seed: 5, Loss: 0.3, Duplicate: 0.5, Reorder: 0.2, Jitter: time.Millisecond})
	if !slices.Equal(base, more) {
		t.Fatalf("adding faults changed which datagrams are lost: %d vs %d lost", len(base), len(more))
	}
}

func TestInjectorRates(t *testing.T) {
	const n = 100_000
	tests := []struct {
		name string
		f    Faults
	}{
		{"none", Faults{Seed: 1}},
		{"loss 1%", Faults{Seed: 2, Loss: 0.01}},
		{"loss 50%", Faults{Seed: 3, Loss: 0.5}},
		{"loss 100%", Faults{Seed: 4, Loss: 1}},
		{"duplicate 10%", Faults{Seed: 5, Duplicate: 0.1}},
		{"duplicate 100%", Faults{Seed: 6, Duplicate: 1}},
		{"reorder 5%", Faults{Seed: 7, Reorder: 0.05}},
		{"everything", Faults{Seed: 8, Loss: 0.1, Duplicate: 0.05, Reorder: 0.02, Delay: 50 * time.Microsecond, Jitter: 20 * time.Microsecond}},
	}
	// within reports whether k successes in n trials fit probability p,
	// allowing six standard deviations.
	within := func(k, n uint64, p float64) bool {
		tol := 6*math.Sqrt(p*(1-p)/float64(n)) + 1e-12
		return math.Abs(float64(k)/float64(n)-p) <= tol
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustInjector(t, tt.f)
			out := run(t, in, n, time.Microsecond)
			s := in.Stats()
			if s.Passed+s.Dropped+s.Overflow != n || s.Overflow != 0 {
				t.Fatalf("stats %+v do not account for %d datagrams", s, n)
			}
			if uint64(len(out)) != s.Passed+s.Duplicated {
				t.Fatalf("delivered %d, want Passed+Duplicated = %d", len(out), s.Passed+s.Duplicated)
			}
			if !within(s.Dropped, n, tt.f.Loss) {
				t.Errorf("dropped %d of %d, want rate %v", s.Dropped, n, tt.f.Loss)
			}
			if s.Passed > 0 && !within(s.Duplicated, s.Passed, tt.f.Duplicate) {
				t.Errorf("duplicated %d of %d, want rate %v", s.Duplicated, s.Passed, tt.f.Duplicate)
			}
			if s.Passed > 0 && !within(s.Reordered, s.Passed, tt.f.Reorder) {
				t.Errorf("reordered %d of %d, want rate %v", s.Reordered, s.Passed, tt.f.Reorder)
			}
			if wantDelayed := tt.f.Delay > 0 || tt.f.Jitter > 0; (s.Delayed == s.Passed) != wantDelayed && s.Passed > 0 {
				t.Errorf("delayed %d of %d passed, want all: %v", s.Delayed, s.Passed, wantDelayed)
			}
		})
	}
}

func TestInjectorDueOrder(t *testing.T) {
	tests := []struct {
		name string
		f    Faults
		// overtaken reports whether some datagram must be overtaken.
		overtaken bool
	}{
		{"no faults: in order", Faults{}, false},
		{"fixed delay: in order", Faults{Delay: time.Millisecond}, false},
		{"duplicates: in order", Faults{Duplicate: 0.5}, false},
		{"jitter: reordered", Faults{Seed: 1, Jitter: 100 * time.Microsecond}, true},
		{"reorder: overtaken", Faults{Seed: 2, Reorder: 0.1, ReorderDelay: 50 * time.Microsecond}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, mustInjector(t, tt.f), 2000, 10*time.Microsecond)
			overtaken := false
			for k := 1; k < len(out); k++ {
				if out[k].due.Before(out[k-1].due) {
					t.Fatalf("delivery %d due %v before the previous %v", k, out[k].due, out[k-1].due)
				}
				if out[k].due.Equal(out[k-1].due) && out[k].i < out[k-1].i {
					t.Fatalf("datagrams %d and %d due at the same time came out of arrival order", out[k-1].i, out[k].i)
				}
				overtaken = overtaken || out[k].i < out[k-1].i
			}
			if overtaken != tt.overtaken {
				t.Fatalf("some datagram overtaken: %v, want %v", overtaken, tt.overtaken)
			}
		})
	}
}

func TestInjectorDueTimes(t *testing.T) {
	tests := []struct {
		name string
		f    Faults
		due  time.Duration // after the push
	}{
		{"no delay is due at once", Faults{Loss: 0.0001, Seed: 3}, 0},
		{"delay", Faults{Delay: 5 * time.Millisecond}, 5 * time.Millisecond},
		{"reorder delay default", Faults{Reorder: 1}, DefaultReorderDelay},
		{"delay plus reorder delay", Faults{Delay: time.Millisecond, Reorder: 1, ReorderDelay: time.Second}, time.Second + time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustInjector(t, tt.f)
			in.Push(t0, []byte("x"), testAddr)
			due, ok := in.NextDue()
			if !ok || !due.Equal(t0.Add(tt.due)) {
				t.Fatalf("NextDue = %v, %v, want %v", due, ok, t0.Add(tt.due))
			}
			if tt.due > 0 {
				if _, _, ok := in.Pop(due.Add(-1)); ok {
					t.Fatal("Pop returned a datagram 1ns before it was due")
				}
			}
			b, _, ok := in.Pop(due)
			if !ok || string(b) != "x" {
				t.Fatalf("Pop at due time = %q, %v", b, ok)
			}
			if _, ok := in.NextDue(); ok {
				t.Fatal("NextDue reports a datagram after the only one was popped")
			}
		})
	}
}

func TestInjectorJitterRange(t *testing.T) {
	const delay, jitter = time.Millisecond, 100 * time.Microsecond
	in := mustInjector(t, Faults{Seed: 9, Delay: delay, Jitter: jitter})
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for range 10_000 {
		in.Push(t0, nil, testAddr)
		due, _ := in.NextDue()
		in.Pop(due)
		d := due.Sub(t0)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < delay || hi >= delay+jitter || hi-lo < jitter*9/10 {
		t.Fatalf("delays span [%v, %v], want within [%v, %v) and spread across it", lo, hi, delay, delay+jitter)
	}
}

func TestInjectorDuplicatesFollowOriginal(t *testing.T) {
	in := mustInjector(t, Faults{Duplicate: 1})
	out := run(t, in, 100, time.Microsecond)
	if len(out) != 200 {
		t.Fatalf("delivered %d, want 200", len(out))
	}
	for k := 0; k < len(out); k += 2 {
		if out[k].i != k/2 || out[k+1].i != k/2 {
			t.Fatalf("deliveries %d, %d are %d, %d, want %d twice", k, k+1, out[k].i, out[k+1].i, k/2)
		}
	}
	if s := in.Stats(); s.Passed != 100 || s.Duplicated != 100 {
		t.Fatalf("stats %+v, want 100 passed and 100 duplicated", s)
	}
}

func TestInjectorDropPredicate(t *testing.T) {
	var offered []int
	in := mustInjector(t, Faults{Drop: func(b []byte) bool {
		offered = append(offered, index(b))
		return index(b)%10 == 3
	}})
	out := run(t, in, 100, time.Microsecond)
	if len(offered) != 100 {
		t.Fatalf("Drop saw %d datagrams, want every one of 100", len(offered))
	}
	for _, d := range out {
		if d.i%10 == 3 {
			t.Fatalf("datagram %d was delivered, want it dropped", d.i)
		}
	}
	if s := in.Stats(); s.Dropped != 10 || s.Passed != 90 || len(out) != 90 {
		t.Fatalf("stats %+v, delivered %d; want 10 dropped, 90 passed", s, len(out))
	}
}

func TestInjectorBounds(t *testing.T) {
	tests := []struct {
		name     string
		f        Faults
		size     int
		push     int
		stats    Stats
		heldWant int
	}{
		{"MaxHeld", Faults{Delay: time.Second, MaxHeld: 10}, 8, 15,
			Stats{Passed: 10, Delayed: 10, Overflow: 5}, 10},
		{"MaxHeldBytes", Faults{Delay: time.Second, MaxHeldBytes: 100}, 30, 5,
			Stats{Passed: 3, Delayed: 3, Overflow: 2}, 3},
		{"duplicate that does not fit", Faults{Delay: time.Second, Duplicate: 1, MaxHeld: 3}, 8, 3,
			Stats{Passed: 2, Duplicated: 1, Delayed: 2, Overflow: 1}, 3},
		{"undelivered immediate datagrams count too", Faults{Loss: 0.0001, Seed: 3, MaxHeld: 4}, 8, 6,
			Stats{Passed: 4, Overflow: 2}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustInjector(t, tt.f)
			for range tt.push {
				in.Push(t0, make([]byte, tt.size), testAddr)
			}
			if s := in.Stats(); s != tt.stats || in.Held() != tt.heldWant {
				t.Fatalf("stats %+v held %d, want %+v held %d", s, in.Held(), tt.stats, tt.heldWant)
			}
			// Once drained, there is room again.
			for in.Held() > 0 {
				due, _ := in.NextDue()
				in.Pop(due)
			}
			in.Push(t0, make([]byte, tt.size), testAddr)
			if s := in.Stats(); s.Overflow != tt.stats.Overflow {
				t.Fatalf("after draining, a push overflowed: %+v", s)
			}
		})
	}
}

func TestInjectorCopiesHeldDatagrams(t *testing.T) {
	in := mustInjector(t, Faults{Delay: time.Millisecond})
	b := []byte("hello")
	in.Push(t0, b, testAddr)
	copy(b, "HELLO")
	got, _, _ := in.Pop(t0.Add(time.Millisecond))
	if !bytes.Equal(got, []byte("hello")) {
		t.Fatalf("Pop = %q, want the bytes as pushed", got)
	}
}

func TestInjectorSteadyStateDoesNotAllocate(t *testing.T) {
	in := mustInjector(t, Faults{Seed: 1, Loss: 0.1, Duplicate: 0.1, Reorder: 0.1,
		Delay: 20 * time.Microsecond, Jitter: 10 * time.Microsecond, Drop: func(b []byte) bool { return b[0] == 0xff }})
	b := make([]byte, 1200)
	now := t0
	step := func() {
		now = now.Add(time.Microsecond)
		in.Push(now, b, testAddr)
		for {
			if _, _, ok := in.Pop(now); !ok {
				break
			}
		}
	}
	for range 10_000 { // warm up the heap and the buffer pool
		step()
	}
	if n := testing.AllocsPerRun(10_000, step); n != 0 {
		t.Fatalf("Push+Pop allocate %v times per datagram in steady state", n)
	}
}

// FuzzInjector drives an Injector with arbitrary pushes and clock steps
// and checks its invariants.
func FuzzInjector(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(3), int64(1))
	f.Add([]byte{255, 0, 255, 0, 128, 128}, uint8(200), int64(7))
	f.Fuzz(func(t *testing.T, ops []byte, knobs uint8, seed int64) {
		faults := Faults{
			Seed:         seed,
			Loss:         float64(knobs&3) / 4,
			Duplicate:    float64(knobs>>2&3) / 3,
			Reorder:      float64(knobs>>4&3) / 3,
			ReorderDelay: time.Duration(knobs) * time.Microsecond,
			Jitter:       time.Duration(knobs>>6) * 7 * time.Microsecond,
			MaxHeld:      int(knobs%17) + 1,
			MaxHeldBytes: int(knobs) * 3,
		}
		in := mustInjector(t, faults)
		now, last := t0, t0
		var pushed, popped uint64
		for _, op := range ops {
			if op&1 == 0 {
				in.Push(now, bytes.Repeat([]byte{op}, int(op%32)), testAddr)
				pushed++
			} else {
				now = now.Add(time.Duration(op) * time.Microsecond)
			}
			for {
				due, held := in.NextDue()
				b, _, ok := in.Pop(now)
				if !ok {
					if held && !due.After(now) {
						t.Fatalf("nothing popped at %v though a datagram is due at %v", now, due)
					}
					break
				}
				if due.Before(last) {
					t.Fatalf("popped a datagram due %v after one due %v", due, last)
				}
				last = due
				if len(b) > 0 && !bytes.Equal(b, bytes.Repeat(b[:1], int(b[0]%32))) {
					t.Fatalf("popped a corrupted datagram %v", b)
				}
				popped++
			}
			if in.Held() > faults.MaxHeld {
				t.Fatalf("%d held, beyond MaxHeld %d", in.Held(), faults.MaxHeld)
			}
		}
		s := in.Stats()
		if s.Passed+s.Dropped+s.Overflow != pushed {
			t.Fatalf("stats %+v do not account for %d pushes", s, pushed)
		}
		if popped+uint64(in.Held()) != s.Passed+s.Duplicated {
			t.Fatalf("popped %d + held %d != passed %d + duplicated %d", popped, in.Held(), s.Passed, s.Duplicated)
		}
	})
}
