package reliable

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestForgedFloodNewReceiver: someone without the key sends a keyed
// FlowMin publisher 10,000 forged STATUS a second (random receiver ids
// and salts, random tags) for a second. Each new salt costs a subkey
// derivation before its tag can be checked, within a budget; the flood
// must not use it up so that a new receiver's STATUS, arriving halfway
// through just after a forged one, is refused (with 1,000 derivations a
// second it was, for as long as the flood lasted). The publisher, held
// until it knows a receiver (MinReceivers), publishes once that STATUS
// is in; every forged datagram is counted.
func TestForgedFloodNewReceiver(t *testing.T) {
	now := simEpoch
	s, err := NewSender(SenderConfig{Session: 1, Key: testKey, Flow: FlowConfig{Mode: FlowMin, MinReceivers: 1}}, now)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	from := mustAddrPort("127.0.0.1:9000")
	forge := func() {
		b := AppendStatus(make([]byte, 0, statusLen+TrailerLen), s.Stream(), Status{Receiver: rng.Uint64() | 1, Next: 1, Window: 1 << 20})
		b[2] |= authFlag
		for range TrailerLen {
			b = append(b, byte(rng.Uint32()))
		}
		if err := s.HandleControl(now, mustAddrPort("192.0.2.1:9"), b); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("forged STATUS: %v", err)
		}
	}
	msg := func() error { _, err := s.Publish(now, &transport.Message{Payload: []byte("x")}); return err }
	const rate, flood = 10000, time.Second
	sl := newSealer(testKey)
	for i := range int(flood.Seconds() * rate) {
		now = simEpoch.Add(time.Duration(i) * time.Second / rate)
		forge()
		if i != rate/2 {
			continue
		}
		if err := msg(); !errors.Is(err, ErrFlowControl) {
			t.Fatalf("no receiver yet: %v, want ErrFlowControl", err)
		}
		b := AppendStatus(make([]byte, 0, statusLen+TrailerLen), s.Stream(), Status{Receiver: 7, Next: 1, Window: 1 << 20})
		if err := s.HandleControl(now, from, b[:sl.seal(b[:cap(b)], len(b))]); err != nil {
			t.Fatalf("the new receiver's STATUS during the flood: %v", err)
		}
		if err := msg(); err != nil {
			t.Fatalf("publishing once the receiver is known: %v", err)
		}
	}
	if st := s.Stats(); st.Unauthenticated != rate*uint64(flood.Seconds()) || st.FlowReceivers != 1 {
		t.Fatalf("Unauthenticated %d, FlowReceivers %d: want %d, 1", st.Unauthenticated, st.FlowReceivers, rate)
	}
}
