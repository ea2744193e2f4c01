package storage

import (
	"math/rand/v2"
	"testing"
)

// TestOffsetForTimeMatchesScan: over segments and time-index entries
// made small, with timestamps that go back and forth, OffsetForTime
// answers as a scan of every record does (the first record in offset
// order with a timestamp ≥ the one asked for: all earlier segments'
// largest timestamps are below it), before and after a restart (the
// sealed segments' time indexes then come from their files).
func TestOffsetForTimeMatchesScan(t *testing.T) {
	for seed := range uint64(4) {
		clk := newClock()
		cfg := testConfig(t, clk)
		cfg.SegmentBytes, cfg.IndexIntervalBytes = 2<<10, 128
		s, l := openPartition(t, cfg)
		rng := rand.New(rand.NewPCG(seed, 7))
		base := clk.ms()
		for range 300 {
			spec := batchSpec{ts: base + rng.Int64N(5000), pid: -1, epoch: -1, firstSeq: -1, codec: []int{codecNone, codecZstd}[rng.IntN(2)]}
			for range 1 + rng.IntN(5) {
				spec.recs = append(spec.recs, rec{value: []byte("v"), tsDelta: rng.Int64N(300)})
			}
			appendDurable(t, l, makeBatch(t, spec))
		}
		check := func(when string, l *Log) {
			t.Helper()
			all := readAll(t, l, 0)
			for q := base - 1; q <= base+5400; q += 7 {
				want, wantTs := int64(-1), int64(-1)
				for _, r := range all {
					if r.ts >= q {
						want, wantTs = r.offset, r.ts
						break
					}
				}
				off, ts, err := l.OffsetForTime(q)
				if err != nil || off != want || ts != wantTs {
					t.Fatalf("seed %d, %s: OffsetForTime(base%+d) = %d at %d, %v; a scan finds %d at %d (%d segments)", seed, when, q-base, off, ts-base, err, want, wantTs-base, segsOf(l))
				}
			}
		}
		check("appended", l)
		s.Close()
		s, l = openPartition(t, cfg)
		check("reopened", l)
		s.Close()
	}
}
