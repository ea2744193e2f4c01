package reliable

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestRepairDoesNotPlaceJoiningStream: a subscriber that starts while a
// feed is being repaired for others (repairs are multicast) may first
// get a repair of an old datagram. The stream is placed by the first
// live datagram, not by the repair: JoinLive starts at the live edge,
// without delivering the history between or asking for it (JoinEarliest
// at the window's low edge, as before). Before, a repair of sequence 10
// placed a JoinLive stream at 10: the live messages waited while 990
// old ones were NACKed, to be delivered as if live (and, under flow
// control, its STATUS held the publisher at 10).
func TestRepairDoesNotPlaceJoiningStream(t *testing.T) {
	for _, join := range []JoinPolicy{JoinLive, JoinEarliest} {
		now := simEpoch
		s, err := NewSender(SenderConfig{Session: NewSession(now, fixedRand(3)), WindowDatagrams: 4096}, now)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, MaxMTU)
		var sent [][]byte
		publish := func() {
			if _, err := s.Publish(now, &transport.Message{Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			s.Flush()
			for {
				n, _, ok := s.NextOutgoing(now, buf)
				if !ok {
					return
				}
				if h, _ := ParseHeader(buf[:n]); h.Type == TypeData {
					sent = append(sent, append([]byte(nil), buf[:n]...))
				}
			}
		}
		for i := 0; i < 1000; i++ {
			publish()
		}
		now = now.Add(time.Second)
		r, err := NewReceiver(ReceiverConfig{Rand: fixedRand(0), Join: join, ListenSince: now, MaxJump: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		h := &recordHandler{}
		from := mustAddrPort("127.0.0.1:5000")
		repair := append([]byte(nil), sent[9]...) // sequence 10
		repair[headerLen] |= dataFlagRepair
		_ = r.HandleDatagram(now, from, repair, h)
		for i := 0; i < 3; i++ {
			publish()
			_ = r.HandleDatagram(now, from, sent[len(sent)-1], h)
		}
		r.Poll(now.Add(10*time.Millisecond), h)
		var first uint64
		for _, ev := range h.evs {
			if ev.Kind == transport.EventStreamStart {
				first = ev.Start.FirstSeq
			}
		}
		switch join {
		case JoinLive:
			if first != 1001 || len(h.msgs) != 3 || h.nacks != 0 {
				t.Fatalf("JoinLive: started at %d, %d messages, %d NACKs; want 1001, the 3 live ones, none", first, len(h.msgs), h.nacks)
			}
		case JoinEarliest:
			if st := r.streams[0]; st.next != 1 || st.met != 1000 || h.nacks == 0 {
				t.Fatalf("JoinEarliest: placed at %d, met at %d, %d NACKs; want 1, 1000, the window asked for", st.next, st.met, h.nacks)
			}
		}
	}
}
