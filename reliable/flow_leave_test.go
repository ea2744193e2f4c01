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
	status := func(next uint64) {
		if err := s.HandleControl(now, from, seal(Status{Receiver: 7, Next: next, Window: 1 << 20})); err != nil {
			t.Fatal(err)
		}
	}
	status(1)
	forged := AppendStatus(nil, s.Stream(), Status{Receiver: 7, Leaving: true})
	if err := s.HandleControl(now, from, forged); err == nil || len(s.flow.rcv) != 1 {
		t.Fatalf("forged leaving STATUS: err %v, receivers %d: want an error, 1", err, len(s.flow.rcv))
	}
	leave := seal(Status{Receiver: 7, Leaving: true})
	if err := s.HandleControl(now, from, append([]byte(nil), leave...)); err != nil || len(s.flow.rcv) != 0 {
		t.Fatalf("leaving STATUS: err %v, receivers %d: want nil, 0", err, len(s.flow.rcv))
	}
	// Back: it took a datagram sent after it left (a STATUS naming no
	// more would be one sent before it left: TestFlowStatusAfterLeave).
	if _, err := s.Publish(now, &transport.Message{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	s.Flush()
	if _, _, ok := s.NextOutgoing(now, make([]byte, DefaultMTU)); !ok || s.SentNext() != 2 {
		t.Fatalf("nothing sent: SentNext %d", s.SentNext())
	}
	status(2)
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

// leaveRig is a FlowMin Sender, sans IO, and one receiver's STATUS.
type leaveRig struct {
	t    *testing.T
	s    *Sender
	now  time.Time
	from netip.AddrPort
	sl   *sealer // nil without a key
	buf  []byte
}

func newLeaveRig(t *testing.T, key []byte, flow FlowConfig) *leaveRig {
	t.Helper()
	s, err := NewSender(SenderConfig{Session: 1, Key: key, Flow: flow}, simEpoch)
	if err != nil {
		t.Fatal(err)
	}
	g := &leaveRig{t: t, s: s, now: simEpoch, from: mustAddrPort("127.0.0.1:9000"), buf: make([]byte, 65536)}
	if key != nil {
		g.sl = newSealer(key)
	}
	return g
}

// datagram is st as its receiver sends it (sealed now, with a key).
func (g *leaveRig) datagram(st Status) []byte {
	b := AppendStatus(make([]byte, 0, statusLen+TrailerLen), g.s.Stream(), st)
	if g.sl != nil {
		b = b[:g.sl.seal(b[:cap(b)], len(b))]
	}
	return b
}

func (g *leaveRig) deliver(b []byte) {
	g.t.Helper()
	if err := g.s.HandleControl(g.now, g.from, b); err != nil {
		g.t.Fatal(err)
	}
}

// publish publishes a one-datagram message and sends what flow control
// lets go.
func (g *leaveRig) publish() {
	g.t.Helper()
	if _, err := g.s.Publish(g.now, &transport.Message{Payload: []byte("x")}); err != nil {
		g.t.Fatal(err)
	}
	g.s.Flush()
	for {
		if _, _, ok := g.s.NextOutgoing(g.now, g.buf); !ok {
			return
		}
	}
}

// held reports whether flow control holds published messages back.
func (g *leaveRig) held() bool {
	_, _, msgs := g.s.Unsent()
	return msgs > 0
}

// TestFlowStatusAfterLeave: a receiver that can take one byte past its
// position holds the publisher; it leaves, and a STATUS it sent before
// leaving arrives after the leaving one (UDP reorders). That STATUS is
// ignored (StatusAfterLeave) and the publisher sends on, where it used
// to wait for the receiver that is gone until ReceiverTimeout (an hour
// here). With and without a key (the stale STATUS's counter is fresh:
// the opener takes it).
func TestFlowStatusAfterLeave(t *testing.T) {
	for _, key := range [][]byte{nil, testKey} {
		t.Run(map[bool]string{false: "nokey", true: "key"}[key != nil], func(t *testing.T) {
			g := newLeaveRig(t, key, FlowConfig{Mode: FlowMin, ReceiverTimeout: time.Hour})
			g.deliver(g.datagram(Status{Receiver: 7, Next: 1, Window: 1}))
			stale := g.datagram(Status{Receiver: 7, Next: 1, Window: 1}) // sent before it left
			g.publish()
			g.publish()
			if !g.held() {
				t.Fatal("the receiver does not hold the publisher")
			}
			g.deliver(g.datagram(Status{Receiver: 7, Leaving: true}))
			g.publish()
			if g.held() || len(g.s.flow.rcv) != 0 {
				t.Fatalf("after the leave: held %v, receivers %d: want false, 0", g.held(), len(g.s.flow.rcv))
			}
			g.deliver(stale)
			g.publish()
			g.publish()
			st := g.s.Stats()
			if g.held() || len(g.s.flow.rcv) != 0 || st.StatusAfterLeave != 1 || st.ReceiversLeft != 1 {
				t.Fatalf("after the stale STATUS: held %v, receivers %d, StatusAfterLeave %d, ReceiversLeft %d: want false, 0, 1, 1",
					g.held(), len(g.s.flow.rcv), st.StatusAfterLeave, st.ReceiversLeft)
			}
		})
	}
}

// TestFlowStatusPastLeave: a STATUS naming a position past the
// publisher's when the leaving STATUS came comes from a receiver that
// took datagrams sent after it "left": the leave was forged (possible
// without a key). It is waited for again.
func TestFlowStatusPastLeave(t *testing.T) {
	g := newLeaveRig(t, nil, FlowConfig{Mode: FlowMin, ReceiverTimeout: time.Hour})
	g.deliver(g.datagram(Status{Receiver: 7, Next: 1, Window: 1}))
	g.publish()
	g.deliver(g.datagram(Status{Receiver: 7, Leaving: true})) // forged
	at := g.s.SentNext()
	g.publish()
	g.publish()
	if g.held() || g.s.SentNext() <= at {
		t.Fatalf("after the leave: held %v, SentNext %d (leave at %d)", g.held(), g.s.SentNext(), at)
	}
	g.deliver(g.datagram(Status{Receiver: 7, Next: g.s.SentNext(), Window: 1}))
	if len(g.s.flow.rcv) != 1 {
		t.Fatalf("receivers %d after a STATUS past the leave, want 1", len(g.s.flow.rcv))
	}
	g.publish() // goes: nothing is ahead of the receiver
	g.publish()
	if st := g.s.Stats(); !g.held() || st.StatusAfterLeave != 0 || st.FlowReceivers != 2 {
		t.Fatalf("held %v, StatusAfterLeave %d, FlowReceivers %d: want true, 0, 2", g.held(), st.StatusAfterLeave, st.FlowReceivers)
	}
}

// TestFlowLeftBounded: the receivers that left are remembered at most
// MaxReceivers at a time (the one that left first is forgotten:
// LeftEvicted) and for ReceiverTimeout. A stale STATUS from one still
// remembered is ignored; from one forgotten it is taken, as before
// leaves were remembered.
func TestFlowLeftBounded(t *testing.T) {
	const timeout = time.Second
	g := newLeaveRig(t, nil, FlowConfig{Mode: FlowMin, MaxReceivers: 3, ReceiverTimeout: timeout})
	for id := uint64(1); id <= 10; id++ {
		g.deliver(g.datagram(Status{Receiver: id, Next: 1, Window: 1 << 20}))
		g.deliver(g.datagram(Status{Receiver: id, Leaving: true}))
	}
	st := g.s.Stats()
	if len(g.s.flow.left) != 3 || st.LeftEvicted != 7 || st.ReceiversLeft != 10 {
		t.Fatalf("remembered %d, LeftEvicted %d, ReceiversLeft %d: want 3, 7, 10", len(g.s.flow.left), st.LeftEvicted, st.ReceiversLeft)
	}
	g.deliver(g.datagram(Status{Receiver: 10, Next: 1, Window: 1 << 20}))
	if st := g.s.Stats(); st.StatusAfterLeave != 1 || len(g.s.flow.rcv) != 0 {
		t.Fatalf("remembered: StatusAfterLeave %d, receivers %d: want 1, 0", st.StatusAfterLeave, len(g.s.flow.rcv))
	}
	g.deliver(g.datagram(Status{Receiver: 1, Next: 1, Window: 1 << 20}))
	if st := g.s.Stats(); st.StatusAfterLeave != 1 || len(g.s.flow.rcv) != 1 {
		t.Fatalf("forgotten: StatusAfterLeave %d, receivers %d: want 1, 1", st.StatusAfterLeave, len(g.s.flow.rcv))
	}
	g.now = g.now.Add(timeout)
	g.deliver(g.datagram(Status{Receiver: 9, Next: 1, Window: 1 << 20}))
	if st := g.s.Stats(); st.StatusAfterLeave != 1 || len(g.s.flow.left) != 0 {
		t.Fatalf("ReceiverTimeout after: StatusAfterLeave %d, remembered %d: want 1, 0", st.StatusAfterLeave, len(g.s.flow.left))
	}
}
