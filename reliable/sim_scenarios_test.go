package reliable

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// dataWith reports whether b is an original DATA datagram holding seq.
func dataWith(b []byte, seq uint64) bool {
	h, err := ParseHeader(b)
	if err != nil || h.Type != TypeData {
		return false
	}
	dh, _, err := ParseData(b, nil)
	return err == nil && !dh.Repair && dh.FirstSeq <= seq && seq < dh.FirstSeq+uint64(dh.Count)
}

func TestSimTailLossRecoveredByHeartbeat(t *testing.T) {
	n := newSim(t, 3, SenderConfig{}, ReceiverConfig{}, 1, simFaults{})
	last := uint64(100)
	n.dropTo = func(_ int, b []byte) bool { return dataWith(b, last) }
	n.publish(0, 100, 1, 10*time.Microsecond, 32)
	n.settle(100 * time.Millisecond)
	checkExactlyOnce(t, n.rcvs[0], 100)
	st := n.rcvs[0].r.Stats()
	if st.Recovered != 1 || st.NacksSent == 0 {
		t.Fatalf("tail not recovered through a heartbeat: %+v", st)
	}
}

func TestSimPausedPastWindow(t *testing.T) {
	scfg := SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}
	n := newSim(t, 4, scfg, ReceiverConfig{}, 1, simFaults{})
	rc := n.rcvs[0]
	n.publish(0, 100, 1, 10*time.Microsecond, 32)
	n.settle(time.Millisecond)
	rc.paused = true
	n.publish(100, 1000, 1, 10*time.Microsecond, 32)
	n.settle(time.Millisecond)
	rc.paused = false
	n.publish(1100, 100, 1, 10*time.Microsecond, 32)
	n.settle(100 * time.Millisecond)

	// The pause is reported as unrecoverable, the publisher having no
	// flow control (GapOutpaced): one gap, although the window moves on
	// while the repairs travel (TestSimOutageIsOneGap).
	idx, gaps := rc.indexes()
	if len(gaps) != 1 || gaps[0].From != 101 || gaps[0].Len() < 1000-64 {
		t.Fatalf("gaps %v do not cover the pause", gaps)
	}
	for _, g := range gaps {
		if g.Reason != transport.GapOutpaced {
			t.Fatalf("gap %v: want GapOutpaced", g)
		}
	}
	// Then it continues: everything published after the pause arrives,
	// in order; checkAccounting proves no hole is silent.
	if len(idx) < 200 || idx[99] != 99 || idx[len(idx)-1] != 1199 {
		t.Fatalf("got %d messages, around the gap %v", len(idx), idx[95:105])
	}
	for i := 1; i < len(idx); i++ {
		if idx[i] <= idx[i-1] || (idx[i] > 1100 && idx[i] != idx[i-1]+1) {
			t.Fatalf("after the gap, %d then %d", idx[i-1], idx[i])
		}
	}
	checkAccounting(t, rc, true)
}

func TestSimNackOutsideWindowGetsLost(t *testing.T) {
	scfg := SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}
	n := newSim(t, 5, scfg, ReceiverConfig{NackBackoffMax: time.Millisecond}, 1, simFaults{})
	// Seq 10 is lost and every repair of it too, until it leaves the window.
	n.dropTo = func(_ int, b []byte) bool { return dataWithAny(b, 10) }
	n.publish(0, 300, 1, 100*time.Microsecond, 32)
	n.settle(200 * time.Millisecond)
	_, gaps := n.rcvs[0].indexes()
	if len(gaps) != 1 || gaps[0].From != 10 || gaps[0].To != 10 {
		t.Fatalf("gaps %v", gaps)
	}
	if gaps[0].Reason != transport.GapOutpaced {
		t.Fatalf("reason %v", gaps[0].Reason)
	}
	if n.rcvs[0].msgs != 299 {
		t.Fatalf("delivered %d, want 299", n.rcvs[0].msgs)
	}
}

// dataWithAny is dataWith for repairs too.
func dataWithAny(b []byte, seq uint64) bool {
	dh, _, err := ParseData(b, nil)
	h, herr := ParseHeader(b)
	return herr == nil && h.Type == TypeData && err == nil && dh.FirstSeq <= seq && seq < dh.FirstSeq+uint64(dh.Count)
}

func TestSimLostNoticeForNackBelowWindow(t *testing.T) {
	scfg := SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}
	n := newSim(t, 6, scfg, ReceiverConfig{}, 1, simFaults{})
	n.publish(0, 200, 1, 10*time.Microsecond, 32)
	n.settle(10 * time.Millisecond)
	nack := AppendRanges(nil, TypeNack, n.sender.Stream(), []Range{{1, 5}, {190, 195}})
	if err := n.sender.HandleControl(n.now, n.rcvs[0].addr, nack); err != nil {
		t.Fatal(err)
	}
	n.record = true
	n.settle(10 * time.Millisecond)
	var lost, ncf, repairs int
	for _, s := range n.sent {
		switch {
		case s.typ == TypeLost:
			lost++
		case s.typ == TypeNcf:
			ncf++
		case s.typ == TypeData && s.repair:
			repairs++
		}
	}
	if lost != 1 || ncf != 1 || repairs == 0 {
		t.Fatalf("lost %d ncf %d repairs %d; %v", lost, ncf, repairs, n)
	}
}

func TestSimPublisherRestart(t *testing.T) {
	n := newSim(t, 7, SenderConfig{Feed: 3}, ReceiverConfig{}, 1, simFaults{loss: 0.05})
	rc := n.rcvs[0]
	n.publish(0, 500, 4, 20*time.Microsecond, 32)
	old := n.sender
	// The old publisher crashes: no END, no more repairs. A new one
	// starts on the same feed.
	var err error
	if n.sender, err = NewSender(SenderConfig{Feed: 3, Rand: fixedRand(1)}, n.now); err != nil {
		t.Fatal(err)
	}
	n.publish(500, 500, 4, 20*time.Microsecond, 32)
	// The new session is believed once the old one has been silent for
	// ConfirmTime; it recovers what it sent meanwhile.
	n.settle(DefaultConfirmTime + 200*time.Millisecond)
	// A straggler from the old session must not be delivered.
	var buf [DefaultMTU]byte
	m := transport.Message{Payload: []byte("late")}
	if _, err := old.Publish(n.now, &m); err != nil {
		t.Fatal(err)
	}
	old.Flush()
	for {
		l, _, ok := old.NextOutgoing(n.now, buf[:])
		if !ok {
			break
		}
		_ = rc.r.HandleDatagram(n.now, n.srcAddr, buf[:l], simHandler{n, rc})
	}

	var starts []transport.StreamStart
	var ends []transport.StreamEnd
	seenNew := false
	for _, e := range rc.events {
		switch e.Kind {
		case transport.EventStreamStart:
			starts = append(starts, e.Start)
		case transport.EventStreamEnd:
			ends = append(ends, e.End)
		case transport.EventMessage:
			if e.Message.Stream == n.sender.Stream() {
				seenNew = true
			} else if seenNew || e.Message.Stream != old.Stream() {
				t.Fatalf("message of %v after the new stream started", e.Message.Stream)
			}
		}
	}
	if len(starts) != 2 || starts[1].Replaces != old.Stream() || starts[1].Stream != n.sender.Stream() {
		t.Fatalf("starts %+v", starts)
	}
	if len(ends) != 1 || ends[0].Stream != old.Stream() || ends[0].Reason != transport.EndReplaced {
		t.Fatalf("ends %+v", ends)
	}
	if st := rc.r.Stats(); st.Restarts != 1 || st.Stale == 0 {
		t.Fatalf("stats %+v", st)
	}
	checkAccounting(t, rc, true)
	idx, _ := rc.indexes()
	if idx[len(idx)-1] != 999 {
		t.Fatalf("last message %d", idx[len(idx)-1])
	}
}

// TestSimQuickRestartHeld: a publisher restarted at once after a crash,
// sending a datagram a message for longer than ConfirmTime with a window
// far shorter than that: the receiver holds the new session's datagrams
// until the restart is believed, then delivers the new session from its
// first message with no gap. With HoldBytes at two datagrams it reports
// the Gap the new window could no longer repair, as before holding.
func TestSimQuickRestartHeld(t *testing.T) {
	for _, hold := range []int{0, 200} {
		scfg := SenderConfig{Feed: 5, MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * DefaultMTU}
		n := newSim(t, 36, scfg, ReceiverConfig{ListenSince: simEpoch.Add(-time.Second), HoldBytes: hold}, 1, simFaults{})
		rc := n.rcvs[0]
		n.publish(0, 100, 1, 100*time.Microsecond, 32)
		old := n.sender.Stream()
		scfg.Rand = fixedRand(9)
		var err error
		if n.sender, err = NewSender(scfg, n.now); err != nil {
			t.Fatal(err)
		}
		const count = 4000 // 400 ms of the new session, a datagram each
		n.publish(0, count, 1, 100*time.Microsecond, 32)
		n.settle(100 * time.Millisecond)

		checkAccounting(t, rc, true)
		var idx []int
		var gaps []transport.Gap
		for _, e := range rc.events {
			switch {
			case e.Kind == transport.EventMessage && e.Message.Stream == n.sender.Stream():
				idx = append(idx, int(binary.BigEndian.Uint64(e.Message.Payload)))
			case e.Kind == transport.EventGap:
				gaps = append(gaps, e.Gap)
			}
		}
		st := rc.r.Stats()
		if st.Restarts != 1 {
			t.Fatalf("HoldBytes %d: %d restarts, want 1 (old %v)", hold, st.Restarts, old)
		}
		if hold != 0 {
			if len(gaps) == 0 || st.RestartsDeferred == 0 {
				t.Fatalf("HoldBytes %d: the new session's start was recovered without being held: %d gaps, stats %+v", hold, len(gaps), st)
			}
			continue
		}
		if len(gaps) > 0 || st.RestartsHeld < 2000 || st.RestartsDeferred != 0 {
			t.Fatalf("%d gaps (first %v), stats %+v", len(gaps), gaps, st)
		}
		if len(idx) != count || idx[0] != 0 || idx[count-1] != count-1 {
			t.Fatalf("the new session delivered %d messages (want %d), first %v", len(idx), count, idx[:min(len(idx), 3)])
		}
	}
}

// TestSimNackSuppression: ten receivers lose the same datagram; NCFs
// and the repair suppress their NACKs so that at most two repairs of it
// are sent.
func TestSimNackSuppression(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		n := newSim(t, seed, SenderConfig{}, ReceiverConfig{}, 10, simFaults{})
		n.record = true
		const lostSeq = 200
		n.dropTo = func(_ int, b []byte) bool { return dataWith(b, lostSeq) }
		n.publish(0, 1000, 10, 50*time.Microsecond, 64)
		n.settle(100 * time.Millisecond)
		repairs := 0
		for _, s := range n.sent {
			if s.typ == TypeData && s.repair && s.first <= lostSeq && lostSeq < s.first+uint64(s.count) {
				repairs++
			}
		}
		var nacks, suppressed uint64
		for _, rc := range n.rcvs {
			checkExactlyOnce(t, rc, 1000)
			nacks += rc.r.Stats().NacksSent
			suppressed += rc.r.Stats().Suppressed
		}
		if repairs < 1 || repairs > 2 {
			t.Fatalf("seed %d: %d repairs of the lost datagram (NACKs %d, suppressed %d)", seed, repairs, nacks, suppressed)
		}
		if nacks >= 10 || suppressed == 0 {
			t.Fatalf("seed %d: %d NACKs, %d suppressed: no suppression", seed, nacks, suppressed)
		}
	}
}

// TestNcfBeforePollSuppresses: a receiver descheduled past its NACK
// timer is handed the NCF (read in the same batch) before Poll runs: it
// sends no NACK, and that counts as a suppressed NACK round.
func TestNcfBeforePollSuppresses(t *testing.T) {
	r, err := NewReceiver(ReceiverConfig{Rand: fixedRand(1 << 63)})
	if err != nil {
		t.Fatal(err)
	}
	from := mustAddrPort("127.0.0.1:9")
	h := &countHandler{}
	now := simEpoch
	for _, b := range [][]byte{dataFrame(testID, 1, 1, []byte("a")), dataFrame(testID, 3, 1, []byte("c"))} {
		if err := r.HandleDatagram(now, from, b, h); err != nil {
			t.Fatal(err)
		}
	}
	now = r.Deadline().Add(time.Millisecond) // the NACK timer has expired
	if err := r.HandleDatagram(now, from, AppendRanges(nil, TypeNcf, testID, []Range{{2, 2}}), h); err != nil {
		t.Fatal(err)
	}
	r.Poll(now, h)
	if st := r.Stats(); h.nacks != 0 || st.Suppressed != 1 {
		t.Fatalf("%d NACKs sent, %d suppressed, want 0 and 1", h.nacks, st.Suppressed)
	}
}

func TestSimFragmentedMessages(t *testing.T) {
	n := newSim(t, 8, SenderConfig{}, ReceiverConfig{}, 2, simFaults{loss: 0.1, dup: 0.02, reorder: 0.05})
	sizes := []int{1, 1300, 1400, 5000, 64 << 10, 1 << 20, 100}
	var sent [][]byte
	for i, size := range sizes {
		p := bytes.Repeat([]byte{byte(i + 1)}, size)
		if size >= 4 {
			binary.BigEndian.PutUint32(p[size-4:], uint32(size))
		}
		m := transport.Message{Topic: "big", Key: []byte{byte(i)}, Headers: []transport.Header{{Key: "n", Value: []byte{byte(i)}}}, Payload: p}
		for {
			_, err := n.sender.Publish(n.now, &m)
			if err == nil {
				break
			}
			if err != ErrBackpressure {
				t.Fatal(err)
			}
			n.runUntil(n.now.Add(100 * time.Microsecond))
		}
		sent = append(sent, p)
		n.runUntil(n.now.Add(100 * time.Microsecond))
	}
	n.settle(time.Second)
	for _, rc := range n.rcvs {
		var got []transport.Message
		for _, e := range rc.events {
			if e.Kind == transport.EventMessage {
				got = append(got, e.Message)
			}
			if e.Kind == transport.EventGap {
				t.Fatalf("receiver %d: %v", rc.id, e.Gap)
			}
		}
		if len(got) != len(sent) {
			t.Fatalf("receiver %d: %d messages, want %d", rc.id, len(got), len(sent))
		}
		for i, m := range got {
			if !bytes.Equal(m.Payload, sent[i]) || m.Topic != "big" || m.Key[0] != byte(i) || m.Headers[0].Value[0] != byte(i) {
				t.Fatalf("receiver %d: message %d differs (len %d, want %d)", rc.id, i, len(m.Payload), len(sent[i]))
			}
		}
		checkAccounting(t, rc, false)
	}
}

func TestSimTooLargeForReceiver(t *testing.T) {
	n := newSim(t, 9, SenderConfig{}, ReceiverConfig{MaxMessageSize: 4000}, 1, simFaults{})
	for _, size := range []int{100, 10000, 100} {
		m := transport.Message{Payload: make([]byte, size)}
		if _, err := n.sender.Publish(n.now, &m); err != nil {
			t.Fatal(err)
		}
		n.runUntil(n.now.Add(time.Millisecond))
	}
	n.settle(50 * time.Millisecond)
	rc := n.rcvs[0]
	_, gaps := rc.indexes()
	if rc.msgs != 2 || len(gaps) != 1 || gaps[0].Reason != transport.GapTooLarge || rc.r.Stats().TooLarge != 1 {
		t.Fatalf("msgs %d gaps %v", rc.msgs, gaps)
	}
	checkAccounting(t, rc, false)
}

func TestSimJoinPolicies(t *testing.T) {
	for _, join := range []JoinPolicy{JoinLive, JoinEarliest} {
		// The subscriber started listening after the publisher.
		rcfg := ReceiverConfig{Join: join, ListenSince: simEpoch.Add(time.Second)}
		n := newSim(t, 10, SenderConfig{}, rcfg, 1, simFaults{})
		rc := n.rcvs[0]
		rc.paused = true
		n.publish(0, 100, 1, 10*time.Microsecond, 32)
		n.settle(time.Millisecond)
		rc.paused = false
		n.publish(100, 100, 1, 10*time.Microsecond, 32)
		n.settle(50 * time.Millisecond)
		idx, gaps := rc.indexes()
		want := 100
		if join == JoinEarliest {
			want = 200
		}
		if len(gaps) != 0 || len(idx) != want || idx[len(idx)-1] != 199 {
			t.Fatalf("join %d: %d messages, gaps %v", join, len(idx), gaps)
		}
	}
}

// TestSimFirstMessagesLost: a subscriber that listened before the
// publisher started recovers the stream's first messages, even when the
// first datagrams it sees are well past them.
func TestSimFirstMessagesLost(t *testing.T) {
	n := newSim(t, 13, SenderConfig{}, ReceiverConfig{ListenSince: simEpoch.Add(-time.Second)}, 1, simFaults{})
	n.dropTo = func(_ int, b []byte) bool {
		h, _ := ParseHeader(b)
		return h.Type == TypeHeartbeat || dataWith(b, 1) || dataWith(b, 2)
	}
	n.publish(0, 100, 1, 10*time.Microsecond, 32)
	n.settle(100 * time.Millisecond)
	checkExactlyOnce(t, n.rcvs[0], 100)
	if n.rcvs[0].r.Stats().Recovered != 2 {
		t.Fatalf("%+v", n.rcvs[0].r.Stats())
	}
}

// TestSimJoinSameMillisecond: a publisher that starts in the same
// millisecond as the subscriber (sessions carry milliseconds) still
// counts as started after it.
func TestSimJoinSameMillisecond(t *testing.T) {
	n := newSim(t, 14, SenderConfig{}, ReceiverConfig{ListenSince: simEpoch.Add(700 * time.Microsecond)}, 1, simFaults{})
	n.dropTo = func(_ int, b []byte) bool {
		h, _ := ParseHeader(b)
		return h.Type == TypeHeartbeat || dataWith(b, 1)
	}
	n.publish(0, 50, 1, 10*time.Microsecond, 32)
	n.settle(50 * time.Millisecond)
	checkExactlyOnce(t, n.rcvs[0], 50)
}

// TestSimRestartAfterEnd: a publisher that closed cleanly and started
// again is named as replaced by the new stream.
func TestSimRestartAfterEnd(t *testing.T) {
	n := newSim(t, 15, SenderConfig{Feed: 2}, ReceiverConfig{}, 1, simFaults{})
	n.publish(0, 10, 1, 10*time.Microsecond, 32)
	old := n.sender.Stream()
	n.sender.Close()
	n.settle(DefaultConfirmTime + 5*time.Millisecond)
	var err error
	if n.sender, err = NewSender(SenderConfig{Feed: 2, Rand: fixedRand(3)}, n.now); err != nil {
		t.Fatal(err)
	}
	n.publish(10, 10, 1, 10*time.Microsecond, 32)
	n.settle(DefaultConfirmTime + 5*time.Millisecond)
	var starts []transport.StreamStart
	for _, e := range n.rcvs[0].events {
		if e.Kind == transport.EventStreamStart {
			starts = append(starts, e.Start)
		}
	}
	if len(starts) != 2 || starts[1].Replaces != old {
		t.Fatalf("starts %+v, old %v", starts, old)
	}
}

func TestSessionCarriesStartTime(t *testing.T) {
	a := NewSession(simEpoch, fixedRand(^uint64(0)))
	b := NewSession(simEpoch.Add(time.Millisecond), fixedRand(0))
	if !SessionStart(a).Equal(simEpoch) || b <= a {
		t.Fatalf("%x %x %v", a, b, SessionStart(a))
	}
}

func TestSimStreamEnds(t *testing.T) {
	n := newSim(t, 11, SenderConfig{}, ReceiverConfig{IdleTimeout: 50 * time.Millisecond}, 2, simFaults{})
	n.publish(0, 50, 1, 10*time.Microsecond, 32)
	n.settle(5 * time.Millisecond)
	n.rcvs[1].paused = true // misses every END: must time out instead
	n.sender.Close()
	n.settle(20 * time.Millisecond)
	n.rcvs[1].paused = false
	n.settle(100 * time.Millisecond)
	for i, want := range []transport.EndReason{transport.EndClosed, transport.EndIdle} {
		ev := n.rcvs[i].events
		last := ev[len(ev)-1]
		if last.Kind != transport.EventStreamEnd || last.End.Reason != want || last.End.LastSeq != 50 {
			t.Fatalf("receiver %d: last event %+v", i, last)
		}
		checkExactlyOnce(t, n.rcvs[i], 50)
	}
	if _, err := n.sender.Publish(n.now, &transport.Message{}); err != ErrClosed {
		t.Fatalf("publish after close: %v", err)
	}
}

func TestSimBoundedUnderPathologicalLoss(t *testing.T) {
	// Every other datagram lost and never repaired: the gap list and the
	// reorder buffer hit their bounds, and the receiver keeps going with
	// explicit gaps.
	rcfg := ReceiverConfig{MaxGaps: 8, ReorderFrames: 64, ReorderBytes: 16 << 10}
	n := newSim(t, 12, SenderConfig{}, rcfg, 1, simFaults{})
	n.dropTo = func(_ int, b []byte) bool {
		dh, _, err := ParseData(b, nil)
		return err == nil && dh.FirstSeq%2 == 0
	}
	n.publish(0, 5000, 1, 10*time.Microsecond, 32)
	n.settle(500 * time.Millisecond)
	rc := n.rcvs[0]
	st := rc.r.Stats()
	if st.Overflow == 0 || st.Gaps == 0 || rc.msgs < 2400 {
		t.Fatalf("stats %+v, msgs %d", st, rc.msgs)
	}
	checkAccounting(t, rc, true)
	last := rc.events[len(rc.events)-1]
	if last.Kind == transport.EventGap && last.Gap.To < 5000 {
		t.Fatalf("receiver stuck: last event %v", last.Gap)
	}
}

func TestReceiverFeedsAndStreamLimit(t *testing.T) {
	r, err := NewReceiver(ReceiverConfig{Feeds: []uint32{1, 2}, MaxStreams: 1, Rand: fixedRand(0)})
	if err != nil {
		t.Fatal(err)
	}
	h := &countHandler{}
	now := simEpoch
	from := mustAddrPort("127.0.0.1:1")
	for feed := uint32(1); feed <= 3; feed++ {
		b := AppendBeat(nil, TypeHeartbeat, transport.StreamID{Feed: feed, Session: 9}, Beat{Next: 1, Low: 1})
		if err := r.HandleDatagram(now, from, b, h); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.Streams != 1 || st.StreamDrops != 1 || st.Filtered != 1 {
		t.Fatalf("%+v", st)
	}
}

// TestSimEndSurvivesBurst: a burst of loss that takes every datagram to
// a receiver for 5 ms from the publisher's Close (every END of a
// back-to-back pair) leaves it a later END: its stream ends "closed by
// publisher", not "publisher silent". The ENDs go out EndRepeats times,
// further and further apart.
func TestSimEndSurvivesBurst(t *testing.T) {
	n := newSim(t, 12, SenderConfig{}, ReceiverConfig{IdleTimeout: 500 * time.Millisecond}, 1, simFaults{})
	n.publish(0, 50, 1, 10*time.Microsecond, 32)
	n.settle(5 * time.Millisecond)
	closed := n.now
	var ends []time.Duration
	n.dropTo = func(_ int, b []byte) bool {
		h, err := ParseHeader(b)
		if err != nil || h.Type != TypeEnd {
			return false
		}
		ends = append(ends, n.now.Sub(closed))
		return n.now.Sub(closed) < 5*time.Millisecond
	}
	n.sender.Close()
	n.settle(DefaultConfirmTime + 50*time.Millisecond) // an END is held ConfirmTime
	ev := n.rcvs[0].events
	if last := ev[len(ev)-1]; last.Kind != transport.EventStreamEnd || last.End.Reason != transport.EndClosed || last.End.LastSeq != 50 {
		t.Fatalf("last event %+v, want the stream closed at 50; ENDs sent at %v", last, ends)
	}
	checkExactlyOnce(t, n.rcvs[0], 50)
	if len(ends) != EndRepeats || !n.sender.Idle() {
		t.Fatalf("ENDs sent at %v, want %d; idle %v", ends, EndRepeats, n.sender.Idle())
	}
	t.Logf("ENDs sent at %v", ends)
}
