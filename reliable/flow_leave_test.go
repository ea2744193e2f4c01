package reliable

import (
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestSimFlowLeave: a FlowMin publisher with a fast and a slow receiver;
// the slow one leaves (its subscriber closes: Receiver.Leave) and stops.
// The publisher drops it at once (ReceiversLeft) instead of waiting
// ReceiverTimeout for it (FlowTimeouts stays 0), with and without a key.
func TestSimFlowLeave(t *testing.T) {
	for _, key := range [][]byte{nil, testKey} {
		t.Run(map[bool]string{false: "nokey", true: "key"}[key != nil], func(t *testing.T) {
			scfg := flowWindow
			scfg.Key = key
			scfg.Flow = FlowConfig{Mode: FlowMin, ReceiverTimeout: time.Hour}
			n := newSim(t, 5, scfg, ReceiverConfig{Key: key, StatusWindow: 16 * DefaultMTU}, 2, simFaults{})
			n.publish(0, 100, 1, 10*time.Microsecond, 32)
			n.settle(10 * time.Millisecond)
			if st := n.sender.Stats(); st.FlowReceivers != 2 || len(n.sender.flow.rcv) != 2 {
				t.Fatalf("both receivers not waited for: %+v", st)
			}
			slow := n.rcvs[0]
			slow.r.Leave(n.now, simHandler{n, slow})
			slow.paused = true
			n.settle(time.Millisecond)
			st := n.sender.Stats()
			if st.ReceiversLeft != 1 || len(n.sender.flow.rcv) != 1 {
				t.Fatalf("ReceiversLeft %d, receivers waited for %d: want 1, 1", st.ReceiversLeft, len(n.sender.flow.rcv))
			}
			// With ReceiverTimeout an hour, this finishes only because
			// the receiver that left is not waited for.
			n.publish(100, 3000, 4, 10*time.Microsecond, 32)
			n.settle(100 * time.Millisecond)
			if st := n.sender.Stats(); st.FlowTimeouts != 0 || st.ReceiversLeft != 1 {
				t.Fatalf("FlowTimeouts %d, ReceiversLeft %d: want 0, 1", st.FlowTimeouts, st.ReceiversLeft)
			}
			checkExactlyOnce(t, n.rcvs[1], 3100)
		})
	}
}

// TestFlowLeaveKeyed: with a key, a leaving STATUS is taken only from a
// key holder and only once: a forged one (no tag) and a replayed one
// leave the receiver waited for.
func TestFlowLeaveKeyed(t *testing.T) {
	now := simEpoch
	s, err := NewSender(SenderConfig{Session: 1, Key: testKey, Flow: FlowConfig{Mode: FlowMin}}, now)
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddrPort("127.0.0.1:9000")
	sl := newSealer(testKey)
	seal := func(st Status) []byte {
		b := AppendStatus(make([]byte, 0, statusLen+TrailerLen), s.Stream(), st)
		return b[:sl.seal(b[:cap(b)], len(b))]
	}
	status := func() {
		if err := s.HandleControl(now, from, seal(Status{Receiver: 7, Next: 1, Window: 1 << 20})); err != nil {
			t.Fatal(err)
		}
	}
	status()
	forged := AppendStatus(nil, s.Stream(), Status{Receiver: 7, Leaving: true})
	if err := s.HandleControl(now, from, forged); err == nil || len(s.flow.rcv) != 1 {
		t.Fatalf("forged leaving STATUS: err %v, receivers %d: want an error, 1", err, len(s.flow.rcv))
	}
	leave := seal(Status{Receiver: 7, Leaving: true})
	if err := s.HandleControl(now, from, append([]byte(nil), leave...)); err != nil || len(s.flow.rcv) != 0 {
		t.Fatalf("leaving STATUS: err %v, receivers %d: want nil, 0", err, len(s.flow.rcv))
	}
	status() // back
	if err := s.HandleControl(now, from, leave); err == nil || len(s.flow.rcv) != 1 {
		t.Fatalf("replayed leaving STATUS: err %v, receivers %d: want an error, 1", err, len(s.flow.rcv))
	}
	if st := s.Stats(); st.ReceiversLeft != 1 || st.Unauthenticated != 1 || st.Replayed != 1 {
		t.Fatalf("ReceiversLeft %d, Unauthenticated %d, Replayed %d: want 1 each", st.ReceiversLeft, st.Unauthenticated, st.Replayed)
	}
}

// TestStatusLeavingWire: a leaving STATUS is next = 0 on the wire, which
// a publisher that predates it rejects (sequence 0) and so ignores.
func TestStatusLeavingWire(t *testing.T) {
	b := AppendStatus(nil, transport.StreamID{Feed: 1, Session: 1}, Status{Receiver: 3, Next: 99, Window: 5, Tag: 2, Leaving: true})
	if next := b[headerLen+8 : headerLen+16]; string(next) != string(make([]byte, 8)) {
		t.Fatalf("leaving STATUS next % x, want 0", next)
	}
	st, err := ParseStatus(b)
	if err != nil || !st.Leaving || st.Receiver != 3 || st.Next != 0 {
		t.Fatalf("ParseStatus: %+v, %v", st, err)
	}
	if st, err := ParseStatus(AppendStatus(nil, transport.StreamID{Feed: 1, Session: 1}, Status{Receiver: 3, Next: 1})); err != nil || st.Leaving {
		t.Fatalf("ParseStatus of a STATUS: %+v, %v", st, err)
	}
}
