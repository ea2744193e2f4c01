package faultnet

import (
	"testing"
	"time"
)

func BenchmarkInjector(b *testing.B) {
	benchmarks := []struct {
		name string
		f    Faults
	}{
		{"loss", Faults{Seed: 1, Loss: 0.01}},
		{"delay-jitter", Faults{Seed: 1, Delay: 50 * time.Microsecond, Jitter: 20 * time.Microsecond}},
		{"everything", Faults{Seed: 1, Loss: 0.01, Duplicate: 0.01, Reorder: 0.01,
			Delay: 50 * time.Microsecond, Jitter: 20 * time.Microsecond}},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			in := mustInjector(b, bm.f)
			payload := make([]byte, 1200)
			now := t0
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Microsecond)
				in.Push(now, payload, testAddr)
				for {
					if _, _, ok := in.Pop(now); !ok {
						break
					}
				}
			}
		})
	}
}
