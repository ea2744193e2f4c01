package pipe

import (
	"testing"

	"github.com/brokerless/brokerless/transport"
)

// TestRereadSinceKeepsAnInterleavedStreamUnresumed: two pipes, of two
// clusters whose topics share a name, write srcLog into one
// destination stream: this one 1..5, the other 1..10 after it. Resume
// finds srcLog going backwards, and does not resume it
// (Stats.Interleaved). The other writes 11..13; a stream start reads
// only those and one record before, all in order. srcLog must stay
// unresumed, as a full Reread of the destination (which sees it go
// backwards) leaves it: this pipe's own 6..13, which the destination
// does not hold, are written, not dropped and acknowledged.
func TestRereadSinceKeepsAnInterleavedStreamUnresumed(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	tail := append(tailOf(dst, srcLog, 1, 5), shifted(5, tailOf(dst, srcLog, 1, 10))...)
	if _, err := c.ResumeAcknowledged(tail); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Interleaved != 1 {
		t.Fatalf("Interleaved = %d, want 1", s.Interleaved)
	}
	n := c.Unread([]transport.Message{{Stream: dst, Seq: 17}})
	if n != 4 {
		t.Fatalf("Unread = %d, want 4", n)
	}
	if ok, err := c.RereadSince(part1, shifted(14, tailOf(dst, srcLog, 10, 13)), n); !ok || err != nil {
		t.Fatalf("RereadSince = %v, %v: want taken", ok, err)
	}
	feed(t, c, startEv(part1, 0))
	var evs []*transport.Event
	for pos := uint64(6); pos <= 13; pos++ {
		evs = append(evs, msg(srcLog, pos))
	}
	if _, ws := feed(t, c, evs...); len(ws) != 8 {
		t.Errorf("wrote %d of srcLog 6..13, which the destination holds of another source only: want all 8", len(ws))
	}
}

// TestRereadAfterTheDestinationShrankReadsWhatIsNew: the destination
// stream, read up to offset 99, is made again and holds 50 records: a
// start reads its full tail. Then another member writes part1 1..55 at
// 50..104 and its group committed none: the next start must read all
// of them (not only those past 99, the end of the destination read
// before it was made again), so that part1 1..55 are dropped, not
// written twice.
func TestRereadAfterTheDestinationShrankReadsWhatIsNew(t *testing.T) {
	dst := transport.StreamID{Topic: "dest"}
	c := newCore(t, 0)
	if _, err := c.ResumeAcknowledged(tailOf(dst, srcLog, 1, 100)); err != nil {
		t.Fatal(err)
	}
	made := tailOf(dst, part0, 1, 50)
	if n := c.Unread([]transport.Message{made[len(made)-1]}); n != DefaultTailRecords {
		t.Fatalf("Unread of a destination that shrank = %d, want a full read", n)
	}
	if err := c.Reread(part0, made); err != nil {
		t.Fatal(err)
	}
	now := append(tailOf(dst, part0, 1, 50), shifted(50, tailOf(dst, part1, 1, 55))...)
	n := c.Unread(now[len(now)-1:])
	if n < DefaultTailRecords {
		ok, err := c.RereadSince(part1, now[max(0, len(now)-n):], n)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			n = DefaultTailRecords
		}
	}
	if n >= DefaultTailRecords {
		if err := c.Reread(part1, now); err != nil {
			t.Fatal(err)
		}
	}
	feed(t, c, startEv(part1, 1))
	var evs []*transport.Event
	for pos := uint64(1); pos <= 55; pos++ {
		evs = append(evs, msg(part1, pos))
	}
	if _, ws := feed(t, c, evs...); len(ws) != 0 {
		t.Errorf("wrote %d of part1 1..55, which the destination holds: want none", len(ws))
	}
}

// TestRereadForgetsADestinationMadeAgain: the destination streams were
// read holding part0 1..100 (dA) and part1 1..100 (dB). dA is deleted
// and made again, and holds part0 1..10 now (another member's writes),
// or nothing. A start reads the full tail (dA ends before what was
// read), and what was read of dA before is replaced by what it holds
// now: part0 11..100, which dA no longer holds, are written, not
// dropped (and acknowledged: lost). dB, which did not shrink, is still
// held.
func TestRereadForgetsADestinationMadeAgain(t *testing.T) {
	dA, dB := transport.StreamID{Topic: "dest"}, transport.StreamID{Topic: "dest", Partition: 1}
	for _, tc := range []struct {
		name string
		now  []transport.Message // dA's records, made again
	}{
		{"holds 10", tailOf(dA, part0, 1, 10)},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCore(t, 0)
			if _, err := c.ResumeAcknowledged(append(tailOf(dA, part0, 1, 100), tailOf(dB, part1, 1, 100)...)); err != nil {
				t.Fatal(err)
			}
			bLast := tailOf(dB, part1, 100, 100)
			bLast[0].Seq = 99
			last := append(tc.now[max(0, len(tc.now)-1):], bLast...)
			if n := c.Unread(last); n != DefaultTailRecords {
				t.Fatalf("Unread = %d, want a full read", n)
			}
			if err := c.Reread(part0, append(tc.now, tailOf(dB, part1, 1, 100)...)); err != nil {
				t.Fatal(err)
			}
			evs := []*transport.Event{startEv(part0, 1)}
			for pos := uint64(1); pos <= 100; pos++ {
				evs = append(evs, msg(part0, pos))
			}
			_, ws := feed(t, c, evs...)
			if want := 100 - len(tc.now); len(ws) != want {
				t.Errorf("wrote %d of part0 1..100, of which dA holds %d now: want %d", len(ws), len(tc.now), want)
			}
			evs = []*transport.Event{startEv(part1, 1)}
			for pos := uint64(1); pos <= 100; pos++ {
				evs = append(evs, msg(part1, pos))
			}
			if _, ws := feed(t, c, evs...); len(ws) != 0 {
				t.Errorf("wrote %d of part1 1..100, which dB holds: want none", len(ws))
			}
		})
	}
}
