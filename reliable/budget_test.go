package reliable

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// TestTokenBucketReadyIsNeverEarly: at the time ready names, take
// succeeds. Rounded down, a tiny shortfall gave a wait of 0 that left
// the bucket short, and a caller polling at the deadline spun (the NACK
// flood simulation without budgets never advanced its clock).
func TestTokenBucketReadyIsNeverEarly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100_000; i++ {
		rate := 1 + r.Int64N(1<<30)
		b := newTokenBucket(rate, 1<<20, simEpoch)
		b.tokens = r.Float64() * 2000
		n := 1 + r.IntN(2000)
		at := b.ready(simEpoch, n)
		if !b.take(at, n) {
			t.Fatalf("rate %d, %v tokens, %d wanted: not there at %v", rate, b.tokens, n, at.Sub(simEpoch))
		}
	}
}

// TestSourceTableBounded: sources beyond MaxNackSources share the
// overflow budget until one of the table has been idle for sourceIdle.
func TestSourceTableBounded(t *testing.T) {
	cfg := SenderConfig{Session: 1, MaxNackSources: 2}
	cfg.setDefaults()
	b := newBudgets(&cfg, simEpoch)
	addr := func(i int) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(i)) }
	for i := 1; i <= 2; i++ {
		if src, full := b.source(addr(i), simEpoch, 0, 0); full || src.addr != addr(i) {
			t.Fatalf("source %d: full %v", i, full)
		} else {
			src.last = simEpoch
		}
	}
	if src, full := b.source(addr(3), simEpoch.Add(time.Second), 0, 0); !full || src != &b.overflow {
		t.Fatal("a third source while the others are active got its own budget")
	}
	if src, full := b.source(addr(3), simEpoch.Add(sourceIdle), 0, 0); full || src.addr != addr(3) || len(b.index) != 2 {
		t.Fatalf("a third source did not replace an idle one: full %v, %d indexed", full, len(b.index))
	}
}
