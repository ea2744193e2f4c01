package main

import (
	"regexp"
	"strconv"
	"testing"
)

type tick struct{ topic, payload string }

func ticks(seed uint64, n int) []tick {
	g := newTickGen(seed)
	out := make([]tick, n)
	for i := range out {
		topic, payload := g.next()
		out[i] = tick{topic, string(payload)}
	}
	return out
}

func TestTicksAreDeterministic(t *testing.T) {
	a, b := ticks(42, 1000), ticks(42, 1000)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("tick %d differs for the same seed: %q vs %q", i, a[i], b[i])
		}
	}
	c := ticks(43, 1000)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same > 100 {
		t.Errorf("seeds 42 and 43 agree on %d of 1000 ticks", same)
	}
}

// The ticks of a seed are pinned, so a demo or benchmark run can be
// repeated exactly, across runs and versions.
func TestTicksGolden(t *testing.T) {
	want := []tick{
		{"AMZN", "AMZN bid=185.08 ask=185.11 bsz=800 asz=300"},
		{"INTC", "INTC bid=31.42 ask=31.45 bsz=900 asz=400"},
		{"META", "META bid=505.60 ask=505.61 bsz=600 asz=100"},
	}
	got := ticks(1, len(want))
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tick %d = %q, want %q", i, got[i], want[i])
		}
	}
}

var tickRE = regexp.MustCompile(`^([A-Z]+) bid=(\d+\.\d\d) ask=(\d+\.\d\d) bsz=(\d+)00 asz=(\d+)00$`)

func TestTickFormatAndWalk(t *testing.T) {
	known := map[string]bool{}
	for _, s := range symbols {
		known[s.symbol] = true
	}
	seen := map[string]bool{}
	for i, tk := range ticks(7, 100000) {
		m := tickRE.FindStringSubmatch(tk.payload)
		if m == nil {
			t.Fatalf("tick %d: payload %q has the wrong form", i, tk.payload)
		}
		if m[1] != tk.topic || !known[tk.topic] {
			t.Fatalf("tick %d: topic %q, payload %q", i, tk.topic, tk.payload)
		}
		bid, _ := strconv.ParseFloat(m[2], 64)
		ask, _ := strconv.ParseFloat(m[3], 64)
		if bid < 1 || ask <= bid || ask-bid > 0.035 {
			t.Fatalf("tick %d: bid %v ask %v", i, bid, ask)
		}
		seen[tk.topic] = true
	}
	if len(seen) != len(symbols) {
		t.Errorf("saw %d of %d symbols", len(seen), len(symbols))
	}
}

func TestAppendCents(t *testing.T) {
	for cents, want := range map[int64]string{0: "0.00", 5: "0.05", 100: "1.00", 18921: "189.21", 3140: "31.40"} {
		if got := string(appendCents(nil, cents)); got != want {
			t.Errorf("appendCents(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestTickGenDoesNotAllocate(t *testing.T) {
	g := newTickGen(1)
	if n := testing.AllocsPerRun(1000, func() { g.next() }); n != 0 {
		t.Errorf("next allocates %v times", n)
	}
}
