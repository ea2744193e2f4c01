package reliable

import (
	"bytes"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestFragmentBoundaries: messages of sizes around whole multiples of
// what one datagram carries, after a first message that leaves
// various room in the open datagram, arrive whole and in order, and no
// datagram passes the MTU.
func TestFragmentBoundaries(t *testing.T) {
	room := DefaultMTU - dataHeadLen - frameHeadLen
	for _, lead := range []int{0, 1, 50, 1200, room - 70, room - 64, room - 63, room - 10} {
		for _, size := range []int{room - 20, room - 12, room - 11, room - 10, room - 9, room, room + 1, 2*room - 20, 2 * room, 2*room + 1, 3*room - 11, 3*room - 10, 5 * room} {
			// A small window: 104 senders, each made with its window
			// mapped (pretouch), would otherwise touch 1.7 GB.
			s, err := NewSender(SenderConfig{Session: NewSession(simEpoch, fixedRand(1)),
				MaxMessageSize: 8 * room, MaxQueued: 32, WindowDatagrams: 64}, simEpoch)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := NewReceiver(ReceiverConfig{Rand: fixedRand(0), ListenSince: simEpoch})
			h := &recordHandler{}
			var want [][]byte
			if lead > 0 {
				p := bytes.Repeat([]byte{1}, lead)
				want = append(want, p)
				if _, err := s.Publish(simEpoch, &transport.Message{Payload: p}); err != nil {
					t.Fatal(err)
				}
			}
			for k := 0; k < 3; k++ {
				p := make([]byte, size)
				for i := range p {
					p[i] = byte(i*7 + k)
				}
				want = append(want, p)
				if _, err := s.Publish(simEpoch, &transport.Message{Payload: p}); err != nil {
					t.Fatal(err)
				}
			}
			s.Flush()
			buf := make([]byte, MaxMTU)
			for {
				n, _, ok := s.NextOutgoing(simEpoch, buf)
				if !ok {
					break
				}
				if n > DefaultMTU {
					t.Fatalf("datagram of %d", n)
				}
				_ = r.HandleDatagram(simEpoch, mustAddrPort("127.0.0.1:1"), buf[:n], h)
			}
			if len(h.msgs) != len(want) || len(h.gapsOf()) != 0 {
				t.Fatalf("lead %d size %d: %d msgs, gaps %v", lead, size, len(h.msgs), h.gapsOf())
			}
			for i := range want {
				if !bytes.Equal(h.msgs[i], want[i]) {
					t.Fatalf("lead %d size %d: message %d differs (len %d want %d)", lead, size, i, len(h.msgs[i]), len(want[i]))
				}
			}
		}
	}
}

// TestSimFragmentLostForGood: the first, a middle or the last fragment
// of a message lost for good (every copy, repairs too) makes one Gap
// of exactly that message's sequence numbers; the messages around it
// are delivered.
func TestSimFragmentLostForGood(t *testing.T) {
	for _, drop := range []int{0, 1, 2} { // which fragment of the message is lost
		room := DefaultMTU - dataHeadLen - frameHeadLen
		n := newSim(t, 7, SenderConfig{}, ReceiverConfig{RecoveryTimeout: 50 * time.Millisecond}, 1, simFaults{})
		var target uint64
		n.dropTo = func(i int, b []byte) bool {
			h, err := ParseHeader(b)
			if err != nil || h.Type != TypeData {
				return false
			}
			dh, _, err := ParseData(b, nil)
			if err != nil {
				return false
			}
			return target != 0 && dh.FirstSeq <= target && target < dh.FirstSeq+uint64(dh.Count)
		}
		n.publish(0, 10, 1, time.Millisecond, 2*room)
		first := n.sender.NextSeq()
		target = first + uint64(drop)
		n.publish(10, 1, 1, time.Millisecond, 2*room)
		last := n.sender.NextSeq() - 1
		n.publish(11, 10, 1, time.Millisecond, 2*room)
		n.settle(500 * time.Millisecond)
		idx, gaps := n.rcvs[0].indexes()
		checkAccounting(t, n.rcvs[0], false)
		if len(idx) != 20 || len(gaps) != 1 || gaps[0].From != first || gaps[0].To != last {
			t.Fatalf("drop %d: msgs %d gaps %v, message %d..%d; %v", drop, len(idx), gaps, first, last, n)
		}
	}
}
