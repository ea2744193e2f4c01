package reliable

import (
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestNackWorkBoundedByWhatItCanQueue: a NACK for the whole retransmit
// window (16,384 datagrams) does only as much work, under the
// publisher's lock, as it can queue: it stops at a full repair queue or
// a spent repair budget, and counts the part it refused, instead of
// walking the whole window each time (500 such NACKs, one source's
// burst, cost tens of milliseconds of Publish's lock).
func TestNackWorkBoundedByWhatItCanQueue(t *testing.T) {
	const queue = 64
	for _, uni := range []bool{false, true} {
		name := "multicast"
		if uni {
			name = "unicast"
		}
		t.Run(name, func(t *testing.T) {
			now := simEpoch
			s, err := NewSender(SenderConfig{Rand: fixedRand(7), MaxPendingRepairs: queue, UnicastRepairs: uni}, now)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 65536)
			for i := 0; i < DefaultWindowDatagrams; i++ {
				if _, err := s.Publish(now, &transport.Message{Payload: []byte("x")}); err != nil {
					t.Fatal(err)
				}
				s.Flush()
				for {
					if _, _, ok := s.NextOutgoing(now, buf); !ok {
						break
					}
				}
			}
			held := uint64(s.win.n)
			if held != DefaultWindowDatagrams {
				t.Fatalf("window holds %d datagrams", held)
			}
			from := mustAddrPort("10.6.6.6:6666")
			nack := AppendRanges(nil, TypeNack, s.Stream(), []Range{{1, s.SentNext() - 1}})
			if err := s.HandleControl(now, from, nack); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if s.repairs.size != queue || st.RepairsQueue+st.RepairsOverBudget != held-queue {
				t.Fatalf("first NACK: %d queued, refused %d (queue full) + %d (budget); want %d queued, %d refused", s.repairs.size, st.RepairsQueue, st.RepairsOverBudget, queue, held-queue)
			}
			const nacks = 500 // one source's burst (DefaultSourceNackBurst)
			s.nackVisits = 0
			for i := 1; i < nacks; i++ {
				if err := s.HandleControl(now, from, nack); err != nil {
					t.Fatalf("NACK %d: %v", i, err)
				}
				for {
					if _, _, ok := s.NextOutgoing(now, buf); !ok {
						break
					}
				}
			}
			per := s.nackVisits / (nacks - 1)
			t.Logf("%d NACKs for %d datagrams: %d datagrams visited (%d each); stats %+v", nacks-1, held, s.nackVisits, per, s.Stats())
			if per > queue+1 {
				t.Fatalf("each NACK visited %d datagrams; it can queue at most %d", per, queue)
			}
		})
	}
}

// TestNackWorkStopsWhenBudgetSpent: once a source's repair budget is
// spent, its NACKs for the whole window queue nothing and visit one
// datagram each, the refused part counted.
func TestNackWorkStopsWhenBudgetSpent(t *testing.T) {
	now := simEpoch
	s, err := NewSender(SenderConfig{Rand: fixedRand(7), MaxPendingRepairs: 1 << 16, UnicastRepairs: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	payload := make([]byte, 1000)
	for i := 0; i < DefaultWindowDatagrams; i++ {
		if _, err := s.Publish(now, &transport.Message{Payload: payload}); err != nil {
			t.Fatal(err)
		}
		s.Flush()
		for {
			if _, _, ok := s.NextOutgoing(now, buf); !ok {
				break
			}
		}
	}
	from := mustAddrPort("10.6.6.6:6666")
	nack := AppendRanges(nil, TypeNack, s.Stream(), []Range{{1, s.SentNext() - 1}})
	for i := 0; s.Stats().RepairsOverBudget == 0; i++ {
		if i == 10 {
			t.Fatalf("budget never spent: %+v", s.Stats())
		}
		if err := s.HandleControl(now, from, nack); err != nil {
			t.Fatal(err)
		}
	}
	const nacks = 100
	s.nackVisits = 0
	queued, refused := s.repairs.size, s.Stats().RepairsOverBudget+s.Stats().RepairsQueue
	for i := 0; i < nacks; i++ {
		if err := s.HandleControl(now, from, nack); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if s.repairs.size != queued || s.nackVisits > nacks {
		t.Fatalf("%d NACKs over budget: queued %d more, visited %d datagrams", nacks, s.repairs.size-queued, s.nackVisits)
	}
	if got := st.RepairsOverBudget + st.RepairsQueue - refused; got != nacks*uint64(s.win.n) {
		t.Fatalf("%d NACKs for %d datagrams over budget: %d counted refused, want %d", nacks, s.win.n, got, nacks*s.win.n)
	}
}

// TestRepairLinger: a multicast repair reaches every receiver, so a
// NACK for the same datagram from another receiver within RepairLinger
// of it (it crossed the repair on the way) is not answered with another
// repair; the receiver that caused the repair, asking again, is, and so
// is another receiver once the linger has passed.
func TestRepairLinger(t *testing.T) {
	const linger = 10 * time.Millisecond
	now := simEpoch
	s, err := NewSender(SenderConfig{Rand: fixedRand(7), RepairLinger: linger}, now)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	drain := func() {
		for {
			if _, _, ok := s.NextOutgoing(now, buf); !ok {
				return
			}
		}
	}
	if _, err := s.Publish(now, &transport.Message{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	s.Flush()
	drain()
	a, b := mustAddrPort("127.0.0.1:1001"), mustAddrPort("127.0.0.1:1002")
	nack := AppendRanges(nil, TypeNack, s.Stream(), []Range{{1, 1}})
	for i, step := range []struct {
		after         time.Duration
		from          netip.AddrPort
		repairs, held uint64
	}{
		{0, a, 1, 0},                         // the first NACK: a repair
		{time.Millisecond, b, 1, 1},          // another receiver, within the linger: none
		{time.Millisecond, a, 2, 1},          // the receiver that caused it, again: a repair
		{linger - time.Microsecond, b, 2, 2}, // within the linger of that one
		{linger, b, 3, 2},                    // past it: a repair
	} {
		now = now.Add(step.after)
		if err := s.HandleControl(now, step.from, nack); err != nil {
			t.Fatalf("NACK %d: %v", i, err)
		}
		drain()
		if st := s.Stats(); st.Repairs != step.repairs || st.RepairsLinger != step.held {
			t.Fatalf("after NACK %d: %d repairs, %d held back by the linger; want %d and %d", i, st.Repairs, st.RepairsLinger, step.repairs, step.held)
		}
	}
}
