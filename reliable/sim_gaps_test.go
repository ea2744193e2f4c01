package reliable

import (
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestSimOutageIsOneGap: a subscriber cut off while the publisher's
// small window moves on learns of the loss datagram by datagram, as the
// window's low edge overtakes the repairs it asks for. The adjacent
// losses are reported as one Gap, not one per datagram.
func TestSimOutageIsOneGap(t *testing.T) {
	scfg := SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}
	n := newSim(t, 21, scfg, ReceiverConfig{}, 1, simFaults{})
	rc := n.rcvs[0]
	n.publish(0, 100, 1, 10*time.Microsecond, 32)
	n.settle(time.Millisecond)
	rc.paused = true
	n.publish(100, 5000, 1, 10*time.Microsecond, 32)
	rc.paused = false
	n.publish(5100, 2000, 1, 10*time.Microsecond, 32)
	n.settle(100 * time.Millisecond)

	idx, gaps := rc.indexes()
	checkAccounting(t, rc, true)
	if len(gaps) != 1 || gaps[0].From != 101 || gaps[0].Reason != transport.GapOutpaced {
		t.Fatalf("%d gaps for one outage, want 1 from 101: %v", len(gaps), gaps)
	}
	if idx[len(idx)-1] != 7099 {
		t.Fatalf("last message %d", idx[len(idx)-1])
	}
}

// TestGapHeldAtMostGapDelay: a gap that no message follows is delivered
// GapDelay after it was found, not before; one that a message follows
// is delivered before that message.
func TestGapHeldAtMostGapDelay(t *testing.T) {
	r, err := NewReceiver(ReceiverConfig{Rand: fixedRand(0), GapDelay: 30 * time.Millisecond, ListenSince: simEpoch})
	if err != nil {
		t.Fatal(err)
	}
	id := transport.StreamID{Feed: 1, Session: NewSession(simEpoch, fixedRand(1))}
	h := &countHandler{}
	from := mustAddrPort("127.0.0.1:9")
	start := simEpoch.Add(time.Millisecond)
	beat := func(at time.Time, next, low uint64) {
		_ = r.HandleDatagram(at, from, AppendBeat(nil, TypeHeartbeat, id, Beat{Next: next, Low: low}), h)
	}
	// 1..3 left the window before they arrived: a gap, that nothing follows.
	beat(start, 5, 4)
	for now := start; now.Before(start.Add(30 * time.Millisecond)); now = r.Deadline() {
		r.Poll(now, h)
		if h.gaps != 0 {
			t.Fatalf("gap delivered %v after it was found, before GapDelay", now.Sub(start))
		}
	}
	r.Poll(start.Add(30*time.Millisecond), h)
	if h.gaps != 1 {
		t.Fatalf("%d gaps GapDelay after the loss", h.gaps)
	}
	// 4 arrives; 5..6 leave the window while 7 waits for them: the gap
	// is delivered before message 7, in the same call.
	now := start.Add(40 * time.Millisecond)
	_ = r.HandleDatagram(now, from, dataFrame(id, 4, 4, []byte("x")), h)
	beat(now, 8, 4)
	_ = r.HandleDatagram(now, from, dataFrame(id, 7, 4, []byte("x")), h)
	beat(now, 8, 7)
	if h.gaps != 2 || h.messages != 2 {
		t.Fatalf("gaps %d messages %d: the gap before message 7 was not delivered with it", h.gaps, h.messages)
	}
}

// dataFrame is a DATA datagram of one message with sequence seq.
func dataFrame(id transport.StreamID, seq, low uint64, payload []byte) []byte {
	m := transport.Message{Payload: payload}
	b := appendDataHead(nil, id, seq, low, simEpoch.UnixNano())
	b = appendFrame(b, frameBegin|frameEnd, &m, 0, len(payload), payload)
	putDataCount(b, 1)
	return b
}

// fragSpec is one frame of a hand-built DATA datagram.
type fragSpec struct {
	flags uint8
	total int
	chunk []byte
}

// dataFrames is a DATA datagram of the frames fs, the first with
// sequence first.
func dataFrames(id transport.StreamID, first, low uint64, fs ...fragSpec) []byte {
	m := transport.Message{}
	b := appendDataHead(nil, id, first, low, simEpoch.UnixNano())
	for _, f := range fs {
		b = appendFrame(b, f.flags, &m, 0, f.total, f.chunk)
	}
	putDataCount(b, len(fs))
	return b
}

// TestFragmentsDisagreeingWithTotalAreMalformed: a fragmented message
// whose fragments carry fewer or more bytes than its first fragment
// announced is malformed. It is neither delivered (truncated, or
// padded) nor taken for a message too large for the subscriber: it is
// dropped, counted, and reported as a Gap; the next message is
// delivered.
func TestFragmentsDisagreeingWithTotalAreMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int
	}{{"shorter", 1000}, {"longer", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			r, id, from, h := listeningReceiver(t)
			b := dataFrames(id, 1, 1,
				fragSpec{frameBegin, tc.total, make([]byte, 100)},
				fragSpec{0, 0, make([]byte, 100)},
				fragSpec{frameEnd, 0, make([]byte, 100)},
			)
			if err := r.HandleDatagram(simEpoch, from, b, h); err != nil {
				t.Fatal(err)
			}
			if err := r.HandleDatagram(simEpoch, from, dataFrame(id, 4, 1, []byte("next")), h); err != nil {
				t.Fatal(err)
			}
			r.Poll(simEpoch.Add(time.Second), h)
			gaps := h.gapsOf()
			st := r.Stats()
			if len(h.msgs) != 1 || string(h.msgs[0]) != "next" {
				t.Fatalf("delivered %d messages (sizes %v), want only the next one", len(h.msgs), lens(h.msgs))
			}
			if len(gaps) != 1 || gaps[0].From != 1 || gaps[0].To != 3 || gaps[0].Reason != transport.GapMalformed {
				t.Fatalf("gaps %v, want 1..3 malformed", gaps)
			}
			if st.MalformedMessages != 1 || st.TooLarge != 0 {
				t.Fatalf("MalformedMessages %d, TooLarge %d: want 1, 0", st.MalformedMessages, st.TooLarge)
			}
		})
	}
}

func lens(bs [][]byte) []int {
	var n []int
	for _, b := range bs {
		n = append(n, len(b))
	}
	return n
}
