package reliable

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// flowWindow is a small retransmit window, so that a receiver stopped
// for 50 ms falls out of it at the rate the tests publish.
var flowWindow = SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}

// TestSimFlowControlWaitsForStoppedReceiver: a receiver stopped for
// 50 ms (less than ReceiverTimeout) while the publisher goes as fast as
// it can. With FlowMin the publisher is held and the receiver, back,
// repairs everything from the window: every message exactly once. With
// FlowNone it is outpaced, and its Gap says so.
func TestSimFlowControlWaitsForStoppedReceiver(t *testing.T) {
	for _, mode := range []FlowMode{FlowMin, FlowNone} {
		t.Run(mode.String(), func(t *testing.T) {
			scfg := flowWindow
			scfg.Flow.Mode = mode
			n := newSim(t, 3, scfg, ReceiverConfig{StatusWindow: 16 * DefaultMTU}, 2, simFaults{})
			n.publish(0, 100, 1, 10*time.Microsecond, 32)
			n.rcvs[0].until = n.now.Add(50 * time.Millisecond)
			n.publish(100, 3000, 4, 10*time.Microsecond, 32)
			n.settle(200 * time.Millisecond)
			st := n.sender.Stats()
			if mode == FlowNone {
				_, gaps := n.rcvs[0].indexes()
				if len(gaps) == 0 || gaps[0].Reason != transport.GapOutpaced {
					t.Fatalf("gaps %v, want GapOutpaced", gaps)
				}
				checkAccounting(t, n.rcvs[0], true)
				checkExactlyOnce(t, n.rcvs[1], 3100)
				return
			}
			for _, rc := range n.rcvs {
				checkExactlyOnce(t, rc, 3100)
			}
			if st.FlowHeld == 0 || st.StatusReceived == 0 || st.FlowReceivers != 2 {
				t.Fatalf("flow control did not hold the publisher: %+v", st)
			}
		})
	}
}

// TestSimFlowControlReceiverTimeout: a receiver that stops for good
// holds the publisher for ReceiverTimeout only; then the others go on.
func TestSimFlowControlReceiverTimeout(t *testing.T) {
	scfg := flowWindow
	scfg.Flow = FlowConfig{Mode: FlowMin, ReceiverTimeout: 300 * time.Millisecond}
	n := newSim(t, 4, scfg, ReceiverConfig{StatusWindow: 16 * DefaultMTU}, 2, simFaults{})
	n.publish(0, 100, 1, 10*time.Microsecond, 32)
	n.rcvs[0].paused = true
	start := n.now
	n.publish(100, 3000, 4, 10*time.Microsecond, 32)
	n.settle(100 * time.Millisecond)
	if took := n.now.Sub(start); took < 300*time.Millisecond {
		t.Fatalf("publishing took %v: the stopped receiver was not waited for", took)
	}
	if st := n.sender.Stats(); st.FlowTimeouts != 1 {
		t.Fatalf("FlowTimeouts %d, want 1", st.FlowTimeouts)
	}
	checkExactlyOnce(t, n.rcvs[1], 3100)
}

// TestFlowMinReceivers: with MinReceivers, nothing is published until
// that many receivers have sent a STATUS; a STATUS with another tag does
// not count under FlowTagged.
func TestFlowMinReceivers(t *testing.T) {
	s, err := NewSender(SenderConfig{Session: 1, Flow: FlowConfig{Mode: FlowTagged, Tag: 7, MinReceivers: 1}}, simEpoch)
	if err != nil {
		t.Fatal(err)
	}
	m := transport.Message{Payload: []byte("x")}
	if _, err := s.Publish(simEpoch, &m); !errors.Is(err, ErrFlowControl) {
		t.Fatalf("no receiver yet: %v, want ErrFlowControl", err)
	}
	from := mustAddrPort("127.0.0.1:9")
	other := AppendStatus(nil, s.Stream(), Status{Receiver: 1, Next: 1, Window: 1 << 20, Tag: 8})
	if err := s.HandleControl(simEpoch, from, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(simEpoch, &m); !errors.Is(err, ErrFlowControl) {
		t.Fatalf("only an untagged receiver: %v, want ErrFlowControl", err)
	}
	tagged := AppendStatus(nil, s.Stream(), Status{Receiver: 2, Next: 1, Window: 1 << 20, Tag: 7})
	if err := s.HandleControl(simEpoch, from, tagged); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(simEpoch, &m); err != nil {
		t.Fatalf("with the tagged receiver: %v", err)
	}
}

// TestFlowReceiversBounded: STATUS from more receivers than MaxReceivers
// is dropped and counted.
func TestFlowReceiversBounded(t *testing.T) {
	s, err := NewSender(SenderConfig{Session: 1, Flow: FlowConfig{Mode: FlowMin, MaxReceivers: 3}}, simEpoch)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 10; i++ {
		b := AppendStatus(nil, s.Stream(), Status{Receiver: i, Next: 1, Window: 1 << 20})
		if err := s.HandleControl(simEpoch, mustAddrPort("127.0.0.1:9"), b); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FlowReceivers != 3 || st.FlowReceiversFull != 7 {
		t.Fatalf("receivers %d, full %d, want 3 and 7", st.FlowReceivers, st.FlowReceiversFull)
	}
}

// TestFlowReceiverWindow: the publisher sends no more than the window
// a receiver announced past its position (the rest waits in its queue,
// and Publish is held once the queue is full), and sends on as the
// receiver's STATUS moves.
func TestFlowReceiverWindow(t *testing.T) {
	s, err := NewSender(SenderConfig{Session: 1, Flow: FlowConfig{Mode: FlowMin}}, simEpoch)
	if err != nil {
		t.Fatal(err)
	}
	from := mustAddrPort("127.0.0.1:9")
	const window = 4 * DefaultMTU
	status := func(next uint64) {
		t.Helper()
		if err := s.HandleControl(simEpoch, from, AppendStatus(nil, s.Stream(), Status{Receiver: 1, Next: next, Window: window})); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, DefaultMTU)
	send := func() (sent int) {
		for {
			l, _, ok := s.NextOutgoing(simEpoch, buf)
			if !ok {
				return sent
			}
			sent += l
		}
	}
	status(1)
	published := 0
	for {
		m := transport.Message{Payload: make([]byte, 100)}
		if _, err := s.Publish(simEpoch, &m); errors.Is(err, ErrFlowControl) {
			break
		} else if err != nil {
			t.Fatalf("after %d messages: %v", published, err)
		}
		published++
		if sent := send(); sent > 0 && s.SentNext() > 1 {
			if total := s.Stats().Bytes; total > window {
				t.Fatalf("%d bytes sent past the receiver's position, window %d", total, window)
			}
		}
	}
	if first := s.Stats().Bytes; first < window-DefaultMTU || first > window {
		t.Fatalf("%d bytes sent before the receiver reported, window %d", first, window)
	}
	if !s.Deadline(simEpoch).After(simEpoch) {
		t.Fatal("held data is due at once: the send loop would spin")
	}
	before := s.Stats().Bytes
	status(s.SentNext()) // the receiver has everything sent
	if more := send(); more < window-DefaultMTU || more > window {
		t.Fatalf("after the receiver caught up, %d more bytes sent, want about the window, %d", more, window)
	}
	if s.Stats().Bytes == before {
		t.Fatal("nothing more sent")
	}
}

// TestEndNamesMessagesFlowControlHeld: Close while flow control holds
// published messages. The END names the last message published, not
// the last one sent, so a receiver reports the unsent ones as a Gap;
// the Sender counts them and goes idle.
func TestEndNamesMessagesFlowControlHeld(t *testing.T) {
	now := simEpoch
	s, err := NewSender(SenderConfig{Session: 1, Flow: FlowConfig{Mode: FlowMin}}, now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(ReceiverConfig{Rand: fixedRand(0), ListenSince: SessionStart(1)})
	if err != nil {
		t.Fatal(err)
	}
	h := &recordHandler{}
	from := mustAddrPort("127.0.0.1:5000")
	// One receiver, at the start, that can take one byte past it.
	st := AppendStatus(nil, s.Stream(), Status{Receiver: 9, Next: 1, Window: 1})
	if err := s.HandleControl(now, mustAddrPort("127.0.0.1:9"), st); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	drain := func() {
		for {
			n, _, ok := s.NextOutgoing(now, buf)
			if !ok {
				return
			}
			_ = r.HandleDatagram(now, from, buf[:n], h)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Publish(now, &transport.Message{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		s.Flush()
		drain()
	}
	if from, to, msgs := s.Unsent(); from != 2 || to != 3 || msgs != 2 {
		t.Fatalf("Unsent %d..%d (%d messages), want 2..3 (2)", from, to, msgs)
	}
	s.Close()
	for i := 0; i < 20; i++ {
		drain()
		now = now.Add(time.Millisecond)
	}
	if !s.Idle() || s.Stats().UnsentAtClose != 2 {
		t.Fatalf("after Close: idle %v, stats %+v", s.Idle(), s.Stats())
	}
	r.Poll(now.Add(DefaultConfirmTime), h)
	gaps := h.gapsOf()
	if len(h.msgs) != 1 || len(gaps) != 1 || gaps[0].From != 2 || gaps[0].To != 3 {
		t.Fatalf("receiver: %d messages, gaps %+v; want 1 message and a Gap for 2..3", len(h.msgs), gaps)
	}
	last := h.evs[len(h.evs)-1]
	if last.Kind != transport.EventStreamEnd || last.End.LastSeq != 3 || last.End.Reason != transport.EndClosed {
		t.Fatalf("last event %+v, want the stream closed at 3", last)
	}
}

// TestFlowIgnoresReceiverBehindWindow: a STATUS naming a position the
// retransmit window no longer holds (from any address, any receiver id:
// one forged datagram) does not hold a FlowMin publisher: waiting could
// not help that receiver, whose subscriber reports its own Gap. It is
// counted and ignored, also when it names a receiver already waited for
// (a replay must not move it back).
func TestFlowIgnoresReceiverBehindWindow(t *testing.T) {
	now := simEpoch
	s, err := NewSender(SenderConfig{Session: 1, Flow: FlowConfig{Mode: FlowMin}, WindowDatagrams: 2048, MaxQueued: 1024}, now)
	if err != nil {
		t.Fatal(err)
	}
	real := mustAddrPort("127.0.0.1:9")
	buf := make([]byte, 65536)
	pub := func() error {
		_, err := s.Publish(now, &transport.Message{Payload: []byte("x")})
		s.Flush()
		for {
			if _, _, ok := s.NextOutgoing(now, buf); !ok {
				break
			}
		}
		// The real receiver keeps up.
		_ = s.HandleControl(now, real, AppendStatus(nil, s.Stream(), Status{Receiver: 1, Next: s.SentNext(), Window: 1 << 20}))
		return err
	}
	for i := 0; i < 5000; i++ {
		if err := pub(); err != nil {
			t.Fatal(err)
		}
		now = now.Add(10 * time.Microsecond)
	}
	low := s.win.low(s.SentNext())
	forged := AppendStatus(nil, s.Stream(), Status{Receiver: 0xbad, Next: low - 1, Window: 0})
	if err := s.HandleControl(now, mustAddrPort("10.6.6.6:6666"), forged); err != nil {
		t.Fatal(err)
	}
	// An old STATUS of the real receiver, replayed: ignored too.
	behind := AppendStatus(nil, s.Stream(), Status{Receiver: 1, Next: 1, Window: 0})
	if err := s.HandleControl(now, real, behind); err != nil {
		t.Fatal(err)
	}
	held := 0
	for i := 0; i < 5000; i++ {
		now = now.Add(100 * time.Microsecond)
		if err := pub(); err != nil {
			held++
		}
	}
	st := s.Stats()
	if held > 0 || st.FlowBehind != 2 || st.FlowReceivers != 1 {
		t.Fatalf("STATUS behind the window (low %d): %d of 5000 publishes held; stats %+v", low, held, st)
	}
}

// TestFlowKeyedWaitsForReceiverBehindWindow: with a key, a receiver
// whose first STATUS names a position the window no longer holds (the
// publisher outran it before that STATUS came) is waited for from the
// window's low edge on: the publisher is held until it reports more,
// then goes on. Without a key the same STATUS is ignored
// (TestFlowIgnoresReceiverBehindWindow).
func TestFlowKeyedWaitsForReceiverBehindWindow(t *testing.T) {
	now := simEpoch
	s, err := NewSender(SenderConfig{Session: 1, Key: testKey, Flow: FlowConfig{Mode: FlowMin}, MaxMessageSize: 4096, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU, MaxQueued: 16}, now)
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddrPort("127.0.0.1:9000")
	sl := newSealer(testKey)
	status := func(next uint64) {
		b := AppendStatus(make([]byte, 0, statusLen+TrailerLen), s.Stream(), Status{Receiver: 7, Next: next, Window: 1 << 30})
		if err := s.HandleControl(now, from, b[:sl.seal(b[:cap(b)], len(b))]); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 65536)
	payload := make([]byte, 1000) // a datagram a message
	publish := func() error {
		_, err := s.Publish(now, &transport.Message{Payload: payload})
		s.Flush()
		for {
			if _, _, ok := s.NextOutgoing(now, buf); !ok {
				return err
			}
		}
	}
	// No receiver known: the publisher runs through its window twice.
	for range 128 {
		if err := publish(); err != nil {
			t.Fatal(err)
		}
	}
	low := s.win.low(s.SentNext())
	if low <= 1 {
		t.Fatalf("window low %d: the publisher did not outrun anything", low)
	}
	status(1) // the outrun receiver's first STATUS
	if st := s.Stats(); st.FlowBehind != 1 || len(s.flow.rcv) != 1 {
		t.Fatalf("FlowBehind %d, receivers %d: want the receiver taken, at the low edge", st.FlowBehind, len(s.flow.rcv))
	}
	held := 0
	for range 128 {
		if publish() != nil {
			held++
		}
	}
	if held == 0 {
		t.Fatal("the publisher went on past the outrun receiver's low edge")
	}
	status(s.SentNext()) // it caught up
	if err := publish(); err != nil {
		t.Fatalf("held after the receiver caught up: %v", err)
	}
}
