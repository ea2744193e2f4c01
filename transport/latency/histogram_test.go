package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is the reference: the value of rank ceil(q·n) in sorted.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func TestQuantileAgainstExact(t *testing.T) {
	logUniform := func(r *rand.Rand) time.Duration {
		return time.Duration(math.Exp(r.Float64() * math.Log(float64(time.Hour))))
	}
	tests := []struct {
		name string
		n    int
		gen  func(r *rand.Rand) time.Duration
	}{
		{"log-uniform 1ns..1h", 100_000, logUniform},
		{"uniform 0..300ns", 10_000, func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(300)) }},
		{"uniform 10us..20us", 50_000, func(r *rand.Rand) time.Duration { return 10*time.Microsecond + time.Duration(r.IntN(10_000)) }},
		{"exponential mean 50us", 50_000, func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * 50_000) }},
		{"constant", 1000, func(*rand.Rand) time.Duration { return 123456789 }},
		{"single", 1, logUniform},
		{"two", 2, logUniform},
	}
	qs := []float64{0, 1e-4, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			h := New()
			vals := make([]time.Duration, tt.n)
			var sum int64
			for i := range vals {
				vals[i] = tt.gen(r)
				sum += int64(vals[i])
				h.Record(vals[i])
			}
			slices.Sort(vals)
			if h.Count() != uint64(tt.n) {
				t.Errorf("Count = %d, want %d", h.Count(), tt.n)
			}
			if h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
				t.Errorf("Min, Max = %v, %v, want %v, %v", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
			}
			if want := time.Duration(sum / int64(tt.n)); h.Mean() != want {
				t.Errorf("Mean = %v, want %v", h.Mean(), want)
			}
			for _, q := range qs {
				got, want := h.Quantile(q), exactQuantile(vals, q)
				// Documented bound: within 1/256 of the true value.
				if diff := (got - want).Abs(); diff*256 > want {
					t.Errorf("Quantile(%v) = %v, want %v within 1/256 (off by %v)", q, got, want, diff)
				}
			}
			if h.Quantile(0) != vals[0] || h.Quantile(1) != vals[len(vals)-1] {
				t.Errorf("Quantile(0), Quantile(1) = %v, %v, want exact %v, %v", h.Quantile(0), h.Quantile(1), vals[0], vals[len(vals)-1])
			}
		})
	}
}

func TestEdgeCases(t *testing.T) {
	tests := []struct {
		name                string
		record              []time.Duration
		count, clamped      uint64
		min, max, mean, q50 time.Duration
		q                   float64
		qWant               time.Duration
	}{
		{name: "empty", q: 0.5},
		{name: "zero", record: []time.Duration{0}, count: 1, q: 0.5},
		{name: "negative clamps to 0", record: []time.Duration{-5, 10}, count: 2, max: 10, mean: 5, q: 1, qWant: 10},
		{name: "exact below 256ns", record: []time.Duration{1, 2, 255}, count: 3, min: 1, max: 255, mean: 86, q50: 2, q: 0.9, qWant: 255},
		{name: "beyond Highest clamps", record: []time.Duration{time.Duration(math.MaxInt64), 2 * time.Hour},
			count: 2, clamped: 2, min: Highest, max: Highest, mean: Highest, q50: Highest, q: 1, qWant: Highest},
		{name: "Highest itself is not clamped", record: []time.Duration{Highest}, count: 1,
			min: Highest, max: Highest, mean: Highest, q50: Highest, q: 1, qWant: Highest},
		{name: "q below 0 is Min", record: []time.Duration{7, 9}, count: 2, min: 7, max: 9, mean: 8, q50: 7, q: -1, qWant: 7},
		{name: "q above 1 is Max", record: []time.Duration{7, 9}, count: 2, min: 7, max: 9, mean: 8, q50: 7, q: 2, qWant: 9},
		{name: "NaN q is Min", record: []time.Duration{7, 9}, count: 2, min: 7, max: 9, mean: 8, q50: 7, q: math.NaN(), qWant: 7},
		// 1000 and 1001 share the bucket [1000, 1004), midpoint 1002.
		{name: "quantile limited to Max", record: []time.Duration{1000, 1001}, count: 2,
			min: 1000, max: 1001, mean: 1000, q50: 1001, q: 0.99, qWant: 1001},
		{name: "quantile limited to Min", record: []time.Duration{1003, 1003}, count: 2,
			min: 1003, max: 1003, mean: 1003, q50: 1003, q: 0.5, qWant: 1003},
		{name: "bucket midpoint", record: []time.Duration{1000, 1000, 1003}, count: 3,
			min: 1000, max: 1003, mean: 1001, q50: 1002, q: 0.5, qWant: 1002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New()
			for _, d := range tt.record {
				h.Record(d)
			}
			if h.Count() != tt.count || h.Clamped() != tt.clamped {
				t.Errorf("Count, Clamped = %d, %d, want %d, %d", h.Count(), h.Clamped(), tt.count, tt.clamped)
			}
			if h.Min() != tt.min || h.Max() != tt.max || h.Mean() != tt.mean {
				t.Errorf("Min, Max, Mean = %v, %v, %v, want %v, %v, %v", h.Min(), h.Max(), h.Mean(), tt.min, tt.max, tt.mean)
			}
			if got := h.Quantile(0.5); got != tt.q50 {
				t.Errorf("Quantile(0.5) = %v, want %v", got, tt.q50)
			}
			if got := h.Quantile(tt.q); got != tt.qWant {
				t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.qWant)
			}
		})
	}
}

func TestMeanDoesNotOverflow(t *testing.T) {
	h := New()
	for range 3_000_000 { // 3e6 × 73 min overflows 64 bits of nanoseconds
		h.Record(Highest)
	}
	if h.Mean() != Highest {
		t.Fatalf("Mean = %v, want %v", h.Mean(), Highest)
	}
}

func TestMergeEqualsRecordingAll(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	all, a, b := New(), New(), New()
	for i := range 20_000 {
		d := time.Duration(r.Int64N(int64(2 * time.Hour)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	a.Merge(nil)
	a.Merge(New())
	if *a != *all {
		t.Fatalf("merged histogram differs: %v vs %v", a, all)
	}
	empty := New()
	empty.Merge(all)
	if *empty != *all {
		t.Fatalf("merge into empty differs: %v vs %v", empty, all)
	}
}

func TestReset(t *testing.T) {
	h := New()
	h.Record(time.Second)
	h.Record(3 * time.Hour)
	h.Reset()
	if *h != (Histogram{}) {
		t.Fatalf("Reset left state: %v", h)
	}
	h.Record(5)
	if h.Min() != 5 || h.Max() != 5 || h.Count() != 1 {
		t.Fatalf("after Reset and Record(5): %v", h)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		record []time.Duration
		want   string
	}{
		{nil, "n=0 p50=0s p99=0s p99.9=0s max=0s"},
		{[]time.Duration{1234567}, "n=1 p50=1.23ms p99=1.23ms p99.9=1.23ms max=1.23ms"},
		{[]time.Duration{5, 17, 200}, "n=3 p50=17ns p99=200ns p99.9=200ns max=200ns"},
		{[]time.Duration{2 * time.Second, 3 * time.Hour}, "n=2 p50=2s p99=1h13m10s p99.9=1h13m10s max=1h13m20s"},
	}
	for _, tt := range tests {
		h := New()
		for _, d := range tt.record {
			h.Record(d)
		}
		if got := h.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := New()
	d := time.Duration(1)
	if n := testing.AllocsPerRun(10_000, func() {
		h.Record(d)
		d = d*7 + 13
		if d > Highest {
			d %= Highest
		}
	}); n != 0 {
		t.Fatalf("Record allocates %v times per call", n)
	}
}
