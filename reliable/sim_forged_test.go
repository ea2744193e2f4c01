package reliable

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// The attacks of issue 14: someone who can send to the group and has
// read one datagram forges datagrams of the stream. They come from the
// publisher's own address (spoofed) unless the test says otherwise.

// forge delivers b to every receiver now, as if sent from from.
func (n *simNet) forge(from netip.AddrPort, b []byte) {
	for i := range n.rcvs {
		// Never lost: what the tests check must not hang on the seed.
		n.serial++
		heap.Push(&n.q, simPacket{at: n.now.Add(n.faults.delay), serial: n.serial, to: i, from: from, b: append([]byte(nil), b...)})
	}
}

// forgedPayload is a payload whose index no real message has.
var forgedPayload = binary.BigEndian.AppendUint64(nil, 1<<62)

// TestSimForgedJumpNotBelieved: a HEARTBEAT and a DATA 2^62 sequence
// numbers ahead, from the publisher's address and from another, while
// the stream runs: nothing is given up, the real messages all arrive,
// the forged payload never does.
func TestSimForgedJumpNotBelieved(t *testing.T) {
	n := newSim(t, 31, SenderConfig{}, ReceiverConfig{}, 2, simFaults{loss: 0.01})
	other := netip.MustParseAddrPort("127.0.0.9:40000")
	id := n.sender.Stream()
	n.publish(0, 2000, 4, 20*time.Microsecond, 64)
	for _, from := range []netip.AddrPort{n.srcAddr, other} {
		n.forge(from, AppendBeat(nil, TypeHeartbeat, id, Beat{Next: 1 << 62, Low: 1}))
		n.forge(from, dataFrame(id, 1<<62, 1<<62, forgedPayload))
		n.forge(from, dataFrame(id, 1<<62+1, 1<<62, forgedPayload))
	}
	n.publish(2000, 20000, 4, 20*time.Microsecond, 64)
	n.settle(100 * time.Millisecond)
	for _, rc := range n.rcvs {
		checkExactlyOnce(t, rc, 22000)
		checkAccounting(t, rc, true)
		st := rc.r.Stats()
		if st.Jumps != 3 || st.WrongSource != 3 || st.JumpsConfirmed != 0 {
			t.Fatalf("receiver %d: jumps %d, wrong source %d, confirmed %d", rc.id, st.Jumps, st.WrongSource, st.JumpsConfirmed)
		}
	}
}

// TestSimForgedEndNotBelieved: a forged END in the middle of the stream
// is contradicted by the data that follows it; the real END, later,
// ends the stream once nothing contradicted it for ConfirmTime.
func TestSimForgedEndNotBelieved(t *testing.T) {
	n := newSim(t, 32, SenderConfig{}, ReceiverConfig{}, 2, simFaults{loss: 0.01})
	n.publish(0, 2000, 4, 20*time.Microsecond, 64)
	next := n.sender.NextSeq()
	n.forge(n.srcAddr, AppendBeat(nil, TypeEnd, n.sender.Stream(), Beat{Next: next, Low: 1}))
	n.publish(2000, 20000, 4, 20*time.Microsecond, 64)
	n.settle(10 * time.Millisecond)
	for _, rc := range n.rcvs {
		for _, e := range rc.events {
			if e.Kind == transport.EventStreamEnd {
				t.Fatalf("receiver %d: the forged END ended the stream", rc.id)
			}
		}
		if st := rc.r.Stats(); st.EndsRejected != 1 {
			t.Fatalf("receiver %d: %d ENDs rejected", rc.id, st.EndsRejected)
		}
	}
	n.sender.Close()
	n.settle(DefaultConfirmTime - time.Millisecond)
	for _, rc := range n.rcvs {
		if last := rc.events[len(rc.events)-1]; last.Kind == transport.EventStreamEnd {
			t.Fatalf("receiver %d: the END was believed before ConfirmTime", rc.id)
		}
	}
	n.settle(10 * time.Millisecond)
	for _, rc := range n.rcvs {
		checkExactlyOnce(t, rc, 22000)
		checkAccounting(t, rc, true)
		last := rc.events[len(rc.events)-1]
		if last.Kind != transport.EventStreamEnd || last.End.Reason != transport.EndClosed || last.End.LastSeq != 22000 {
			t.Fatalf("receiver %d: last event %+v", rc.id, last)
		}
	}
}

// TestSimInconsistentEndRejected: an END that claims less than what
// already arrived, or jumps past MaxJump, is rejected at once.
func TestSimInconsistentEndRejected(t *testing.T) {
	n := newSim(t, 33, SenderConfig{}, ReceiverConfig{}, 1, simFaults{})
	n.publish(0, 100, 1, 20*time.Microsecond, 64)
	id := n.sender.Stream()
	n.forge(n.srcAddr, AppendBeat(nil, TypeEnd, id, Beat{Next: 50, Low: 1}))
	n.forge(n.srcAddr, AppendBeat(nil, TypeEnd, id, Beat{Next: 1 << 40, Low: 1}))
	n.settle(DefaultConfirmTime + time.Millisecond)
	rc := n.rcvs[0]
	if st := rc.r.Stats(); st.EndsRejected != 2 {
		t.Fatalf("%d ENDs rejected", st.EndsRejected)
	}
	n.publish(100, 100, 1, 20*time.Microsecond, 64)
	n.settle(time.Millisecond)
	checkExactlyOnce(t, rc, 200)
}

// TestSimForgedRestartNotBelieved: a datagram of a new session of the
// feed, forged while the real stream runs, does not replace it; on a
// subscriber that meets the forged session first, the real one takes
// over once the forged one has been silent for ConfirmTime.
func TestSimForgedRestartNotBelieved(t *testing.T) {
	n := newSim(t, 34, SenderConfig{Feed: 4}, ReceiverConfig{ListenSince: simEpoch.Add(-time.Second)}, 2, simFaults{})
	forged := transport.StreamID{Feed: 4, Session: ^uint64(0)}
	late := n.rcvs[1]
	late.paused = true
	n.publish(0, 1000, 4, 20*time.Microsecond, 64)
	_ = late.r.HandleDatagram(n.now, n.srcAddr, dataFrame(forged, 1, 1, forgedPayload), simHandler{n, late})
	late.paused = false
	n.forge(n.srcAddr, dataFrame(forged, 1, 1, forgedPayload))
	n.publish(1000, 1000, 4, 20*time.Microsecond, 64)
	n.settle(DefaultConfirmTime + 100*time.Millisecond)

	live := n.rcvs[0]
	checkExactlyOnce(t, live, 2000)
	if st := live.r.Stats(); st.RestartsHeld != 1 || st.RestartsDeferred != 0 || st.Restarts != 0 {
		t.Fatalf("live receiver: %+v", st)
	}
	// The late receiver met the forged session first: its one message
	// is delivered (without a key nothing tells it apart), then the
	// real stream replaces it and delivers from the first message after
	// it took over on.
	checkAccounting(t, late, true)
	var starts []transport.StreamStart
	for _, e := range late.events {
		if e.Kind == transport.EventStreamStart {
			starts = append(starts, e.Start)
		}
	}
	if len(starts) != 2 || starts[0].Stream != forged || starts[1].Stream != n.sender.Stream() || starts[1].Replaces != forged {
		t.Fatalf("late receiver: starts %+v", starts)
	}
	idx, _ := late.indexes()
	if idx[len(idx)-1] != 1999 {
		t.Fatalf("late receiver: last message %d", idx[len(idx)-1])
	}
}

// TestSimOutageConfirmsJump: a receiver cut off while the publisher
// sends more than MaxJump frames takes the jump once the publisher's
// datagrams at the old position have stopped for ConfirmTime: the loss
// is reported and the stream goes on.
func TestSimOutageConfirmsJump(t *testing.T) {
	scfg := SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}
	n := newSim(t, 35, scfg, ReceiverConfig{MaxJump: 1 << 16}, 1, simFaults{})
	rc := n.rcvs[0]
	n.publish(0, 100, 1, 20*time.Microsecond, 64)
	rc.paused = true
	n.publish(100, 80000, 16, 20*time.Microsecond, 64)
	rc.paused = false
	n.publish(80100, 20000, 16, 20*time.Microsecond, 64)
	n.settle(DefaultConfirmTime + 100*time.Millisecond)
	st := rc.r.Stats()
	if st.JumpsConfirmed != 1 || st.Jumps == 0 {
		t.Fatalf("jumps %d, confirmed %d", st.Jumps, st.JumpsConfirmed)
	}
	checkAccounting(t, rc, true)
	idx, gaps := rc.indexes()
	if len(gaps) == 0 || gaps[0].From > 101 || idx[len(idx)-1] != 100099 {
		t.Fatalf("gaps %v, last message %d", gaps, idx[len(idx)-1])
	}
}

// TestControlForPublisherAtReceiverCounted: a NACK or a STATUS sent to
// a receiver (they are for a publisher) is dropped, with an error and
// counted as Foreign, never ignored silently.
func TestControlForPublisherAtReceiverCounted(t *testing.T) {
	id := transport.StreamID{Feed: 1, Session: 5}
	for name, b := range map[string][]byte{
		"STATUS": AppendStatus(nil, id, Status{Receiver: 3, Next: 1, Window: 1}),
		"NACK":   AppendRanges(nil, TypeNack, id, []Range{{1, 2}}),
	} {
		r, err := NewReceiver(ReceiverConfig{Rand: fixedRand(0)})
		if err != nil {
			t.Fatal(err)
		}
		err = r.HandleDatagram(simEpoch, mustAddrPort("127.0.0.1:1"), b, &countHandler{})
		if st := r.Stats(); !errors.Is(err, ErrForeign) || st.Foreign != 1 || st.Datagrams != 0 {
			t.Fatalf("%s at a receiver: error %v, stats %+v", name, err, st)
		}
	}
}
