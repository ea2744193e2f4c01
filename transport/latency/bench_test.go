package latency

import (
	"math/rand/v2"
	"testing"
	"time"
)

func BenchmarkRecord(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	vals := make([]time.Duration, 1024)
	for i := range vals {
		vals[i] = time.Duration(r.Int64N(int64(time.Second)))
	}
	h := New()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Record(vals[i&1023])
		i++
	}
}

func BenchmarkQuantile(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	h := New()
	for range 100_000 {
		h.Record(time.Duration(r.Int64N(int64(time.Second))))
	}
	b.ReportAllocs()
	for b.Loop() {
		h.Quantile(0.99)
	}
}
