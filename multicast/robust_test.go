package multicast

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
	"github.com/brokerless/brokerless/transport/faultnet"
)

// TestNackSuppression: ten subscribers lose the same datagram. One
// NACKs; the publisher multicasts an NCF, which reaches the nine others
// while their NACKs are pending and suppresses them (each counts a
// suppressed round), and one multicast repair recovers the loss for
// all ten: one NACK, one repair.
//
// Who NACKs first is set, not drawn: the first subscriber's back-off
// draw is 0 (it NACKs when it finds the loss) and it waits a minute for
// the repair before asking again; the nine others wait the longest
// back-off, a minute, which the NCF's round trip never approaches. The
// test once drew real random back-offs of up to 500 ms (-race) and
// needed the NCF back before the others' timers: with the subscribers'
// and the publisher's goroutines sharing two loaded cores, the first
// NACK took about 160 ms to reach the publisher and be answered, the
// ten found the loss up to 300 ms apart, and up to all ten NACKed (19
// NACKs in one run under four CPU hogs). How many NACK when each draws
// its back-off at random is TestSimNackSuppression's question, in
// virtual time; an NCF read with a NACK timer already expired is
// TestNcfBeforePollSuppresses'; a repair lingering against other
// subscribers' NACKs is TestRepairLinger's. This test checks, over real
// sockets, that an NCF goes to the group and suppresses the NACKs it
// finds pending.
func TestNackSuppression(t *testing.T) {
	cfg := testConfig(t)
	const lost = 500
	var subs []*Subscriber
	for i := range 10 {
		scfg := withFaults(cfg, faultnet.Faults{Drop: func(b []byte) bool { return originalWith(b, lost) }})
		scfg.Receiver.ID = uint64(i + 1) // not drawn from the fixed Rand
		scfg.Receiver.RecoveryTimeout = 2 * time.Minute
		if i == 0 {
			scfg.Rand = constRand(0) // a back-off of 0
			scfg.Receiver.MinRepairTimeout, scfg.Receiver.RepairTimeout = time.Minute, time.Minute
		} else {
			scfg.Rand = constRand(math.MaxUint64) // the longest back-off
			scfg.Receiver.NackBackoffMax = time.Minute
		}
		subs = append(subs, mustSub(t, scfg))
	}
	p := mustPub(t, cfg)
	go publishAt(t, p, 0, 2000, 64, 100_000)
	for i, s := range subs {
		idx, gaps := collect(t, s, 2000, time.Minute)
		if len(gaps) > 0 || len(idx) != 2000 {
			t.Fatalf("subscriber %d: gaps %v, %d messages", i, gaps, len(idx))
		}
	}
	for i, s := range subs {
		st := s.Stats()
		if st.FilterDrops != 1 {
			t.Fatalf("subscriber %d dropped %d datagrams, want 1", i, st.FilterDrops)
		}
		switch {
		case i == 0 && st.NacksSent != 1:
			t.Errorf("the first subscriber sent %d NACKs, want 1", st.NacksSent)
		case i > 0 && (st.NacksSent != 0 || st.Suppressed == 0):
			t.Errorf("subscriber %d sent %d NACKs, %d suppressed (%d NCFs seen): the NCF did not suppress its NACK", i, st.NacksSent, st.Suppressed, st.NcfsSeen)
		}
	}
	if st := p.Stats(); st.NacksReceived != 1 || st.Ncfs == 0 || st.Repairs != 1 {
		t.Errorf("publisher: %d NACKs received, %d NCFs, %d repairs; want 1, at least 1, 1", st.NacksReceived, st.Ncfs, st.Repairs)
	}
}

// constRand is a reliable.Rand that always draws r.
type constRand uint64

func (r constRand) Uint64() uint64 { return uint64(r) }

// originalWith reports whether b is an original (not repair) DATA
// datagram carrying sequence seq.
func originalWith(b []byte, seq uint64) bool {
	h, err := reliable.ParseHeader(b)
	if err != nil || h.Type != reliable.TypeData {
		return false
	}
	dh, _, err := reliable.ParseData(b, nil)
	return err == nil && !dh.Repair && dh.FirstSeq <= seq && seq < dh.FirstSeq+uint64(dh.Count)
}

// TestForeignAndMalformedDatagrams: garbage sent to the group is counted
// and ignored; the stream goes on.
func TestForeignAndMalformedDatagrams(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	p := mustPub(t, cfg)
	publishN(t, p, 0, 10, 32)

	c := rawSender(t, cfg)
	group := net.UDPAddrFromAddrPort(cfg.Group)
	r := rand.New(rand.NewPCG(1, 2))
	valid := reliable.AppendBeat(nil, reliable.TypeHeartbeat, p.Stream(), reliable.Beat{Next: 11, Low: 1})
	for i := 0; i < 500; i++ {
		b := make([]byte, r.IntN(200))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if i%2 == 0 && len(b) > 0 { // ours in form, broken in content
			b = append(valid[:len(valid):len(valid)], b...)
			b[3] = byte(r.IntN(8))
		}
		if _, err := c.WriteTo(b, group); err != nil {
			t.Fatal(err)
		}
	}
	publishN(t, p, 10, 10, 32)
	idx, gaps := collect(t, s, 20, 10*time.Second)
	if len(gaps) > 0 || len(idx) != 20 || idx[19] != 19 {
		t.Fatalf("gaps %v, got %v", gaps, idx)
	}
	st := s.Stats()
	if st.Malformed+st.Foreign < 400 {
		t.Fatalf("bad datagrams not counted: %+v", st.ReceiverStats)
	}
}

// TestPausedSubscriber: the application stops reading; the publisher's
// small window moves on. When it reads again the subscriber reports an
// explicit unrecoverable gap and continues with later messages; every
// sequence number, from the stream's first, is either delivered or
// inside a reported Gap, in order.
func TestPausedSubscriber(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sender = reliable.SenderConfig{MaxMessageSize: 4096, MaxQueued: 16, WindowDatagrams: 64, WindowBytes: 64 * reliable.DefaultMTU}
	scfg := cfg
	scfg.Queue, scfg.RecvBuffer = 2, 64<<10
	s := mustSub(t, scfg)
	p := mustPub(t, cfg)
	a := pausePastWindow(t, s, p)
	if len(a.gaps) == 0 {
		t.Fatal("no gap reported for the pause")
	}
	for _, g := range a.gaps {
		if g.Reason != transport.GapOutpaced {
			t.Fatalf("gap %v: want GapOutpaced (the publisher has no flow control)", g)
		}
	}
	if a.next != 30_201 {
		t.Fatalf("accounted up to sequence %d, want 30200", a.next-1)
	}
}

// pausePastWindow runs the pause the paused-subscriber tests share: 100
// messages read, then 30,000 published at 100,000/s while nobody reads
// (batches queue, then the socket buffer overflows), then 100 more, all
// read back through the accountant. 64-byte messages are never split
// over two datagrams, so each has one sequence number: the count is
// exact.
func pausePastWindow(t *testing.T, s *Subscriber, p *Publisher) *accountant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := &accountant{}
	receiveUntil := func(last int) {
		for a.lastIndex < last {
			ev, err := s.Receive(ctx)
			if err != nil {
				t.Fatalf("last message %d: %v; gaps %v; archive %+v", a.lastIndex, err, a.gaps, s.Stats().Archive)
			}
			a.add(t, &ev)
		}
	}
	publishN(t, p, 0, 100, 64)
	receiveUntil(99)
	if len(a.gaps) != 0 {
		t.Fatalf("gaps before the pause: %v", a.gaps)
	}
	publishAt(t, p, 100, 30_000, 64, 100_000)
	publishN(t, p, 30_100, 100, 64)
	receiveUntil(30_199)
	return a
}

// accountant checks that one stream's events account for every
// sequence number from its first: each message (of one frame, whose
// payload carries its index, sequence index+1) or gap follows on from
// the one before.
type accountant struct {
	started   bool
	next      uint64 // the sequence number due next
	lastIndex int    // index of the last message delivered
	gaps      []transport.Gap
}

func (a *accountant) add(t *testing.T, ev *transport.Event) {
	t.Helper()
	switch ev.Kind {
	case transport.EventStreamStart:
		if a.started {
			t.Fatalf("second stream start %+v", ev.Start)
		}
		a.started, a.next = true, ev.Start.FirstSeq
	case transport.EventMessage:
		m := &ev.Message
		i := indexOf(m.Payload)
		if !a.started || m.Seq != a.next || m.Seq != uint64(i+1) {
			t.Fatalf("message %d with sequence %d, expected sequence %d (started %v)", i, m.Seq, a.next, a.started)
		}
		a.next, a.lastIndex = m.Seq+1, i
	case transport.EventGap:
		g := ev.Gap
		if !a.started || g.From != a.next || g.To < g.From {
			t.Fatalf("%v, expected it to start at %d", g, a.next)
		}
		a.next = g.To + 1
		a.gaps = append(a.gaps, g)
	}
}

// TestUnicastRepairs: repairs go to the subscriber that asked, on its
// unicast socket (without a key, only up to three times the bytes of
// its NACKs; the rest to the group); every subscriber still gets every
// message.
func TestUnicastRepairs(t *testing.T) {
	cfg := testConfig(t)
	cfg.UnicastRepairs = true
	var subs []*Subscriber
	for i := 0; i < 2; i++ {
		scfg := withFaults(cfg, faultnet.Faults{Loss: 0.05, Seed: int64(i + 1)})
		subs = append(subs, mustSub(t, scfg))
	}
	p := mustPub(t, cfg)
	go publishAt(t, p, 0, 20_000, 64, 100_000)
	for _, s := range subs {
		idx, gaps := collect(t, s, 20_000, 30*time.Second)
		if len(gaps) > 0 || idx[len(idx)-1] != 19_999 {
			t.Fatalf("gaps %v; stats %+v", gaps, s.Stats())
		}
		if s.Stats().Recovered == 0 {
			t.Fatal("nothing recovered")
		}
	}
	if st := p.Stats(); st.Repairs == 0 {
		t.Fatalf("no repairs: %+v", st)
	}
}

// TestForgedDatagramsDoNotKillTheFeed: the attack of issue 14 over real
// sockets. Someone reads one datagram of the feed, then sends to the
// group a HEARTBEAT and a DATA 2^62 sequence numbers ahead and an END,
// with the stream's session: the subscriber drops them all (they do not
// come from the stream's source), delivers every real message with no
// gap, and the stream ends only when the publisher closes it.
func TestForgedDatagramsDoNotKillTheFeed(t *testing.T) {
	cfg := testConfig(t)
	s := mustSub(t, cfg)
	spy := rawReceiver(t, cfg)
	p := mustPub(t, cfg)
	publishN(t, p, 0, 100, 32)

	// Read one datagram, as the attacker does.
	buf := make([]byte, maxDatagram)
	_ = spy.SetReadDeadline(time.Now().Add(10 * time.Second))
	var id transport.StreamID
	for id.IsZero() {
		n, _, err := spy.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := reliable.ParseHeader(buf[:n]); err == nil {
			id = h.Stream
		}
	}
	c := rawSender(t, cfg)
	group := net.UDPAddrFromAddrPort(cfg.Group)
	forged := [][]byte{
		reliable.AppendBeat(nil, reliable.TypeHeartbeat, id, reliable.Beat{Next: 1 << 62, Low: 1}),
		reliable.AppendBeat(nil, reliable.TypeEnd, id, reliable.Beat{Next: 101, Low: 1}),
	}
	for _, b := range forged {
		if _, err := c.WriteTo(b, group); err != nil {
			t.Fatal(err)
		}
	}
	publishN(t, p, 100, 20_000, 32)
	idx, gaps := collect(t, s, 20_100, 20*time.Second)
	if len(gaps) > 0 || len(idx) != 20_100 || idx[20_099] != 20_099 {
		t.Fatalf("gaps %v, %d messages", gaps, len(idx))
	}
	if st := s.Stats(); st.WrongSource != 2 {
		t.Fatalf("forged datagrams not counted: %+v", st.ReceiverStats)
	}
	p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ev, err := s.Receive(ctx)
		if err != nil {
			t.Fatalf("no stream end after the publisher closed: %v", err)
		}
		if ev.Kind == transport.EventStreamEnd {
			if ev.End.Reason != transport.EndClosed || ev.End.LastSeq != 20_100 {
				t.Fatalf("%+v", ev.End)
			}
			return
		}
		if ev.Kind != transport.EventStreamStart {
			t.Fatalf("unexpected %v", ev.Kind)
		}
	}
}
