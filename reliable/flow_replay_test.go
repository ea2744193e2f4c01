package reliable

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// statusHandler keeps the last STATUS a Receiver sent.
type statusHandler struct {
	countHandler
	last []byte
}

func (h *statusHandler) SendStatus(_ netip.AddrPort, b []byte) {
	h.statuses++
	h.last = bytes.Clone(b)
}

// TestFlowReplayedStatusDoesNotHoldKeyedPublisher: with a key, a
// receiver that stops for good (a crashed subscriber) is waited for
// ReceiverTimeout, not for ever, even when its last STATUS, captured on
// the way, is replayed every ReceiverTimeout/4: the replay carries the
// counter of a datagram already taken, and is dropped (Replayed).
// Before, a replay renewed the dead receiver: the publisher stayed held
// as long as anyone replayed one captured datagram.
func TestFlowReplayedStatusDoesNotHoldKeyedPublisher(t *testing.T) {
	now := simEpoch
	const timeout = 200 * time.Millisecond
	s, err := NewSender(SenderConfig{Session: NewSession(now, fixedRand(1)), Key: testKey, MaxQueued: 16, MaxMessageSize: 4096,
		Flow: FlowConfig{Mode: FlowMin, ReceiverTimeout: timeout}}, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(ReceiverConfig{Key: testKey, Rand: fixedRand(0), StatusWindow: 4 * DefaultMTU, ListenSince: now})
	if err != nil {
		t.Fatal(err)
	}
	h := &statusHandler{}
	pub, rcv := mustAddrPort("127.0.0.1:5000"), mustAddrPort("127.0.0.1:6000")
	buf := make([]byte, MaxMTU)
	alive := true
	var captured []byte
	step := func() {
		for {
			n, _, ok := s.NextOutgoing(now, buf)
			if !ok {
				break
			}
			if alive {
				_ = r.HandleDatagram(now, pub, buf[:n], h)
			}
		}
		if alive {
			r.Poll(now, h)
			if h.last != nil {
				if err := s.HandleControl(now, rcv, h.last); err != nil {
					t.Fatal(err)
				}
				captured, h.last = h.last, nil
			}
		}
	}
	publish := func() error {
		_, err := s.Publish(now, &transport.Message{Payload: make([]byte, 200)})
		step()
		return err
	}
	for i := 0; i < 200; i++ {
		if err := publish(); err != nil {
			t.Fatalf("message %d with the receiver alive: %v", i, err)
		}
		now = now.Add(time.Millisecond)
	}
	if s.Stats().FlowReceivers != 1 || captured == nil {
		t.Fatalf("the receiver was not waited for: %+v", s.Stats())
	}
	// The receiver crashes; its last STATUS goes on being replayed.
	alive = false
	died := now
	var err2 error
	for now.Sub(died) < 10*timeout {
		if err2 = publish(); err2 == nil && now.Sub(died) > timeout {
			break
		}
		if err2 != nil && !errors.Is(err2, ErrFlowControl) && !errors.Is(err2, ErrBackpressure) {
			t.Fatal(err2)
		}
		if now.Sub(died)%(timeout/4) == 0 {
			_ = s.HandleControl(now, rcv, captured)
		}
		now = now.Add(time.Millisecond)
	}
	st := s.Stats()
	if err2 != nil {
		t.Fatalf("publisher still held %v after the receiver died (ReceiverTimeout %v): %v; stats %+v", now.Sub(died), timeout, err2, st)
	}
	if st.FlowHeld == 0 || st.FlowTimeouts != 1 || st.Replayed == 0 {
		t.Fatalf("held %d, timeouts %d, replayed %d; want the publisher held, then the receiver dropped, the replays counted", st.FlowHeld, st.FlowTimeouts, st.Replayed)
	}
}

// TestReplayWindow: a sender's counters are taken once each, in any
// order within the last 64; older ones and repeats are replays.
func TestReplayWindow(t *testing.T) {
	k := openKey{top: 10, seen: 1}
	for _, c := range []struct {
		n  uint64
		ok bool
	}{{10, false}, {12, true}, {11, true}, {11, false}, {3, true}, {3, false}, {100, true}, {37, true}, {36, false}, {99, true}, {100, false}, {1000, true}, {999, true}, {937, true}, {936, false}} {
		if got := k.fresh(c.n); got != c.ok {
			t.Fatalf("counter %d: fresh %v, want %v", c.n, got, c.ok)
		}
	}
}

// TestFlowManyKeyedReceivers: with a key, a publisher waiting for more
// receivers than it used to keep subkeys for (256) takes the STATUS of
// every one once each has been derived (new ones within the derivation
// budget, auth.go). Before, the subkeys were evicted in turn, each
// STATUS needed a new derivation, and the derivation budget (then 1,000
// a second) dropped most of them as
// Unauthenticated for as long as the receivers stayed: with 600
// receivers reporting every 20 ms, 57% of the STATUS (and NACKs with
// them).
func TestFlowManyKeyedReceivers(t *testing.T) {
	const receivers, rounds = 600, 50
	now := simEpoch
	s, err := NewSender(SenderConfig{Session: 1, Key: testKey, Flow: FlowConfig{Mode: FlowMin}}, now)
	if err != nil {
		t.Fatal(err)
	}
	sealers := make([]*sealer, receivers)
	for i := range sealers {
		sealers[i] = newSealer(testKey)
	}
	b := make([]byte, 0, statusLen+TrailerLen)
	round := func() {
		for i, sl := range sealers {
			b = AppendStatus(b[:0], s.Stream(), Status{Receiver: uint64(i + 1), Next: 1, Window: 1 << 20})
			b = b[:sl.seal(b[:cap(b)], len(b))]
			from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(i >> 8), byte(i)}), 9000)
			_ = s.HandleControl(now, from, b)
		}
		now = now.Add(20 * time.Millisecond)
	}
	// Every receiver's subkey is derived within a second (600 within
	// the budget's burst).
	for i := 0; i < rounds; i++ {
		round()
	}
	before := s.Stats()
	for i := 0; i < rounds; i++ {
		round()
	}
	st := s.Stats()
	if taken, bad := st.StatusReceived-before.StatusReceived, st.Unauthenticated-before.Unauthenticated; taken != receivers*rounds || bad != 0 {
		t.Fatalf("second second: STATUS taken %d of %d, unauthenticated %d", taken, receivers*rounds, bad)
	}
}
