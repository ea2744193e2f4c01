package reliable

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
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

// TestInsertRange: the pending NCF stays ascending, disjoint and merged,
// whatever order ranges come in, as a set of sequence numbers says.
func TestInsertRange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 2000; round++ {
		var rs []Range
		want := map[uint64]bool{}
		limit := 1 + r.IntN(8)
		for i := 0; i < 20; i++ {
			from := 1 + r.Uint64N(60)
			g := Range{from, from + r.Uint64N(4)}
			next, ok := insertRange(append([]Range(nil), rs...), g, limit)
			if !ok {
				if len(rs) != limit {
					t.Fatalf("%v + %v refused below the limit %d", rs, g, limit)
				}
				continue
			}
			rs = next
			for s := g.From; s <= g.To; s++ {
				want[s] = true
			}
			got := 0
			for k, x := range rs {
				if x.From > x.To || (k > 0 && rs[k-1].To+1 >= x.From) {
					t.Fatalf("%v not ascending, disjoint and merged", rs)
				}
				for s := x.From; s <= x.To; s++ {
					if !want[s] {
						t.Fatalf("%v holds %d, never inserted", rs, s)
					}
					got++
				}
			}
			if got != len(want) {
				t.Fatalf("%v holds %d sequence numbers, want %d", rs, got, len(want))
			}
		}
	}
}

// TestNcfsCoalesced: NACKs handled before the next datagram goes out are
// answered by one NCF.
func TestNcfsCoalesced(t *testing.T) {
	s, _ := NewSender(SenderConfig{Session: 1}, simEpoch)
	buf := make([]byte, DefaultMTU)
	for i := 0; i < 100; i++ {
		_, _ = s.Publish(simEpoch, &transport.Message{Payload: make([]byte, 200)})
		s.Flush()
	}
	for _, _, ok := s.NextOutgoing(simEpoch, buf); ok; _, _, ok = s.NextOutgoing(simEpoch, buf) {
	}
	for i := uint64(0); i < 20; i++ {
		nack := AppendRanges(nil, TypeNack, s.Stream(), []Range{{1 + 5*i, 2 + 5*i}})
		if err := s.HandleControl(simEpoch, netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(1000+i)), nack); err != nil {
			t.Fatal(err)
		}
	}
	l, _, _ := s.NextOutgoing(simEpoch, buf)
	h, _ := ParseHeader(buf[:l])
	rr, err := ParseRanges(buf[:l])
	if h.Type != TypeNcf || err != nil || rr.Len() != 20 || s.Stats().Ncfs != 1 {
		t.Fatalf("first datagram %v with %d ranges (%v); %d NCFs", h.Type, rr.Len(), err, s.Stats().Ncfs)
	}
}

// TestUnicastRepairsBoundedForUnvalidatedSource: with UnicastRepairs,
// one forged 34-byte NACK for the whole window, from an address never
// seen (spoofed: the victim's), made the publisher send it ~1.4 MB of
// repairs. An address no key vouches for now gets at most three times
// the bytes it sent (QUIC's anti-amplification limit); the other
// repairs go to the group, which every subscriber reads, and are
// counted. A NACK authenticated with the key vouches for its address:
// its repairs go to it.
func TestUnicastRepairsBoundedForUnvalidatedSource(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		name := "unkeyed"
		if keyed {
			name = "keyed"
		}
		t.Run(name, func(t *testing.T) {
			now := simEpoch
			cfg := SenderConfig{Rand: fixedRand(7), UnicastRepairs: true}
			if keyed {
				cfg.Key = testKey
			}
			s, err := NewSender(cfg, now)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 65536)
			payload := make([]byte, 1300)
			for i := 0; i < 4000; i++ {
				if _, err := s.Publish(now, &transport.Message{Payload: payload}); err != nil {
					t.Fatal(err)
				}
				for {
					if _, _, ok := s.NextOutgoing(now, buf); !ok {
						break
					}
				}
			}
			victim := mustAddrPort("192.0.2.7:53")
			nack := AppendRanges(make([]byte, 0, 1024), TypeNack, s.Stream(), []Range{{1, s.SentNext() - 1}})
			if keyed {
				nack = nack[:newSealer(testKey).seal(nack[:cap(nack)], len(nack))]
			}
			if err := s.HandleControl(now, victim, nack); err != nil {
				t.Fatal(err)
			}
			var toVictim, toGroup int
			for i := 0; i < 1000; i++ { // one second
				now = now.Add(time.Millisecond)
				for {
					n, to, ok := s.NextOutgoing(now, buf)
					if !ok {
						break
					}
					if h, _ := ParseHeader(buf[:n]); h.Type != TypeData {
						continue
					}
					switch to {
					case victim:
						toVictim += n
					case netip.AddrPort{}:
						toGroup += n
					}
				}
			}
			st := s.Stats()
			t.Logf("one %d-byte NACK: %d bytes of repairs to its address, %d to the group; stats %+v", len(nack), toVictim, toGroup, st)
			if keyed {
				if toVictim < 100*len(nack) || toGroup != 0 || st.RepairsToGroup != 0 {
					t.Fatalf("keyed NACK: %d bytes to its address, %d to the group (RepairsToGroup %d): want its repairs unicast", toVictim, toGroup, st.RepairsToGroup)
				}
				return
			}
			if toVictim > 3*len(nack) || toGroup == 0 || st.RepairsToGroup == 0 {
				t.Fatalf("forged NACK of %d bytes: %d bytes sent to its address (limit %d), %d to the group (RepairsToGroup %d)", len(nack), toVictim, 3*len(nack), toGroup, st.RepairsToGroup)
			}
		})
	}
}
