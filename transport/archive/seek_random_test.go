package archive

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestSeekRandomLayouts: Seek(At(p)) lands at or before the feed's first
// record at or after p and after every record before it, for random
// layouts (sessions, markers, other feeds interleaved, reads of random
// size) and seeks in random order (so the hints are exercised).
func TestSeekRandomLayouts(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		log := newFakeLog(1 + rng.IntN(40))
		var pos []Pos
		var at []uint64
		add := func(m transport.Message, p Pos, mine bool) {
			if mine {
				pos, at = append(pos, p), append(at, uint64(len(log.streams[part0])))
			}
			log.add(part0, m)
		}
		nsess := 1 + rng.IntN(3)
		s := uint64(10)
		for range nsess {
			s += uint64(1 + rng.IntN(5))
			id := sess(1, s)
			seq := uint64(rng.IntN(5))
			for range rng.IntN(300) {
				switch r := rng.IntN(20); {
				case r == 0:
					to := seq + uint64(rng.IntN(30))
					add(marker(id, seq, to, transport.GapOverflow), Pos{s, to}, true)
					seq = to + 1
				case r < 4:
					add(recorded(sess(2, s+uint64(rng.IntN(3))), seq, "other"), Pos{}, false)
				case r == 4:
					add(transport.Message{Payload: []byte("plain")}, Pos{}, false)
				default:
					add(recorded(id, seq, "x"), Pos{s, seq}, true)
					seq += uint64(1 + rng.IntN(3))
				}
			}
		}
		if len(log.streams[part0]) == 0 {
			continue
		}
		r := NewReader(log, 1)
		for range 60 {
			var target Pos
			if len(pos) > 0 && rng.IntN(4) != 0 {
				p := pos[rng.IntN(len(pos))]
				target = Pos{p.Session, p.Seq + uint64(rng.IntN(5)) - 2}
				if target.Seq > 1<<60 {
					target.Seq = 0
				}
			} else {
				target = Pos{uint64(8 + rng.IntN(30)), uint64(rng.IntN(400))}
			}
			want := len(pos)
			for i, p := range pos {
				if !p.Less(target) {
					want = i
					break
				}
			}
			if err := r.Seek(ctx, At(target)); err != nil {
				t.Fatal(err)
			}
			lo := uint64(0)
			if want > 0 {
				lo = at[want-1] + 1
			}
			hi := uint64(len(log.streams[part0]))
			if want < len(pos) {
				hi = at[want]
			}
			if r.pos < lo || r.pos > hi {
				t.Fatalf("seed %d batch %d target %v: position %d, want %d..%d", seed, log.batch, target, r.pos, lo, hi)
			}
			if rng.IntN(2) == 0 && r.pos < uint64(len(log.streams[part0])) {
				if _, err := r.Next(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
