package reliable

import (
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestSentNext: after each NextOutgoing, [previous SentNext, SentNext)
// is exactly the sequence numbers a DATA datagram carries for the first
// time, fragments included, and empty for repairs, NCFs and heartbeats.
func TestSentNext(t *testing.T) {
	s, err := NewSender(SenderConfig{Session: 1, MTU: 600}, simEpoch)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 600)
	frames := make([]Frame, 0, 64)
	now := simEpoch
	var seen []Range // what each DATA datagram carried first
	drain := func() {
		for {
			prev := s.SentNext()
			n, _, ok := s.NextOutgoing(now, buf)
			if !ok {
				return
			}
			got := Range{prev, s.SentNext() - 1}
			h, err := ParseHeader(buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			var d DataHead
			if h.Type == TypeData {
				if d, frames, err = ParseData(buf[:n], frames); err != nil {
					t.Fatal(err)
				}
			}
			if h.Type != TypeData || d.Repair {
				if s.SentNext() != prev {
					t.Fatalf("%v datagram (repair %v) moved SentNext %d → %d", h.Type, d.Repair, prev, s.SentNext())
				}
				continue
			}
			if want := (Range{d.FirstSeq, d.FirstSeq + uint64(d.Count) - 1}); got != want {
				t.Fatalf("DATA carries %v, SentNext moved over %v", want, got)
			}
			seen = append(seen, got)
		}
	}
	drain() // the first heartbeat
	for i := range 40 {
		size := 100
		if i%7 == 0 {
			size = 1500 // three fragments
		}
		if _, err := s.Publish(now, &transport.Message{Payload: make([]byte, size)}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			drain()
		}
	}
	drain()
	if s.SentNext() != s.NextSeq() || len(seen) < 10 {
		t.Fatalf("SentNext %d, NextSeq %d after %d DATA datagrams", s.SentNext(), s.NextSeq(), len(seen))
	}
	nack := AppendRanges(nil, TypeNack, s.Stream(), []Range{{2, 4}})
	if err := s.HandleControl(now, netip.MustParseAddrPort("10.0.0.1:1000"), nack); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second) // repairs allowed, a heartbeat due
	before := s.Stats()
	drain()
	if st := s.Stats(); st.Repairs == before.Repairs || st.Heartbeats == before.Heartbeats {
		t.Fatalf("no repair or heartbeat sent: %+v", st)
	}
}
