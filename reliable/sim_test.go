package reliable

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// simNet is a deterministic in-process network: one Sender, several
// Receivers, a virtual clock and seeded per-link loss, duplication,
// reordering and delay. Nothing sleeps; time jumps to the next event.
type simNet struct {
	t       testing.TB
	now     time.Time
	rng     *rand.Rand
	sender  *Sender
	srcAddr netip.AddrPort
	rcvs    []*simRcv
	free    time.Time // the sender's, as simRcv.free
	q       packetHeap
	serial  uint64
	faults  simFaults
	buf     []byte

	// Fault for the sender's outgoing datagrams: return true to drop the
	// copy going to receiver i.
	dropTo func(i int, b []byte) bool
	sent   []simSent // every datagram the sender sent, when recordSent
	record bool
}

type simFaults struct {
	loss, dup, reorder float64
	delay              time.Duration // one way
	reorderDelay       time.Duration
	// cost is the time a receiver or the sender spends on each datagram
	// it takes; datagrams that arrive meanwhile wait, as in a socket
	// buffer. Zero: free.
	cost time.Duration
}

type simSent struct {
	typ    PacketType
	repair bool
	first  uint64
	count  int
}

type simRcv struct {
	id       int
	r        *Receiver
	addr     netip.AddrPort
	paused   bool
	until    time.Time         // paused (takes nothing, runs no timer) before this too
	free     time.Time         // when it has processed every datagram it took (faults.cost)
	events   []transport.Event // payloads copied
	msgs     int
	nacks    int
	statuses int
	lats     []time.Duration // per message delivered: virtual time since it was published
}

type simPacket struct {
	at     time.Time
	serial uint64
	queued bool // arrived, and waited for its turn (faults.cost)
	to     int  // receiver index, or -1 for the sender
	from   netip.AddrPort
	b      []byte
}

type packetHeap []simPacket

func (h packetHeap) Len() int { return len(h) }
func (h packetHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].serial < h[j].serial
}
func (h packetHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *packetHeap) Push(x any)   { *h = append(*h, x.(simPacket)) }
func (h *packetHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}

var simEpoch = time.Unix(1_700_000_000, 0)

func newSim(t testing.TB, seed uint64, scfg SenderConfig, rcfg ReceiverConfig, receivers int, f simFaults) *simNet {
	t.Helper()
	if f.delay == 0 {
		f.delay = 50 * time.Microsecond
	}
	if f.reorderDelay == 0 {
		f.reorderDelay = 300 * time.Microsecond
	}
	n := &simNet{
		t: t, now: simEpoch, rng: rand.New(rand.NewPCG(seed, 1)),
		srcAddr: netip.MustParseAddrPort("127.0.0.1:40000"),
		faults:  f, buf: make([]byte, MaxMTU),
	}
	if scfg.Rand == nil {
		scfg.Rand = rand.New(rand.NewPCG(seed, 2))
	}
	var err error
	if n.sender, err = NewSender(scfg, n.now); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < receivers; i++ {
		rc := rcfg
		if rc.ListenSince.IsZero() {
			rc.ListenSince = simEpoch
		}
		rc.Rand = rand.New(rand.NewPCG(seed, uint64(10+i)))
		r, err := NewReceiver(rc)
		if err != nil {
			t.Fatal(err)
		}
		n.rcvs = append(n.rcvs, &simRcv{id: i, r: r, addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(50000+i))})
	}
	return n
}

// Deliver implements Handler for one receiver via simHandler.
type simHandler struct {
	n *simNet
	r *simRcv
}

func (h simHandler) Deliver(ev *transport.Event) {
	if err := onePart(ev); err != nil {
		h.n.t.Fatal(err)
	}
	e := *ev
	if e.Kind == transport.EventMessage {
		h.r.msgs++
		h.r.lats = append(h.r.lats, h.n.now.Sub(ev.Message.Time))
		e.Message.Payload = append([]byte(nil), ev.Message.Payload...)
		e.Message.Key = append([]byte(nil), ev.Message.Key...)
		e.Message.Headers = nil
		for _, hd := range ev.Message.Headers {
			e.Message.Headers = append(e.Message.Headers, transport.Header{Key: hd.Key, Value: append([]byte(nil), hd.Value...)})
		}
	}
	h.r.events = append(h.r.events, e)
}

func (h simHandler) SendNack(to netip.AddrPort, b []byte) {
	if to != h.n.srcAddr {
		h.n.t.Fatalf("NACK sent to %v, want %v", to, h.n.srcAddr)
	}
	h.r.nacks++
	h.n.send(-1, h.r.addr, b)
}

func (h simHandler) SendStatus(_ netip.AddrPort, b []byte) {
	h.r.statuses++
	h.n.send(-1, h.r.addr, b)
}

// send puts a datagram on the wire towards receiver i (or the sender
// when i is -1), applying the link's faults.
func (n *simNet) send(i int, from netip.AddrPort, b []byte) {
	f := n.faults
	if i >= 0 && n.rng.Float64() < f.loss {
		return
	}
	copies := 1
	if n.rng.Float64() < f.dup {
		copies = 2
	}
	for c := 0; c < copies; c++ {
		at := n.now.Add(f.delay)
		if n.rng.Float64() < f.reorder {
			at = at.Add(time.Duration(n.rng.Int64N(int64(f.reorderDelay))))
		}
		n.serial++
		heap.Push(&n.q, simPacket{at: at, serial: n.serial, to: i, from: from, b: append([]byte(nil), b...)})
	}
}

// flushSender sends everything the sender has due now.
func (n *simNet) flushSender() {
	for {
		l, to, ok := n.sender.NextOutgoing(n.now, n.buf)
		if !ok {
			return
		}
		b := n.buf[:l]
		if n.record {
			h, _ := ParseHeader(b)
			s := simSent{typ: h.Type}
			if h.Type == TypeData {
				dh, _, _ := ParseData(b, nil)
				s.repair, s.first, s.count = dh.Repair, dh.FirstSeq, dh.Count
			}
			n.sent = append(n.sent, s)
		}
		for i, rc := range n.rcvs {
			if to.IsValid() && to != rc.addr {
				continue
			}
			if n.dropTo != nil && n.dropTo(i, b) {
				continue
			}
			n.send(i, n.srcAddr, b)
		}
	}
}

// runUntil advances virtual time, delivering packets and running every
// timer, until t.
func (n *simNet) runUntil(t time.Time) {
	for {
		n.flushSender()
		next := t
		if len(n.q) > 0 && n.q[0].at.Before(next) {
			next = n.q[0].at
		}
		if d := n.sender.Deadline(n.now); !d.IsZero() && d.Before(next) {
			next = d
		}
		for _, rc := range n.rcvs {
			d := rc.r.Deadline()
			if rc.stopped(n.now) {
				d = rc.until // its timers wait until it runs again
			}
			if !d.IsZero() && d.Before(next) {
				next = d
			}
		}
		if next.Before(n.now) {
			next = n.now
		}
		n.now = next
		for len(n.q) > 0 && !n.q[0].at.After(n.now) {
			p := heap.Pop(&n.q).(simPacket)
			if n.faults.cost > 0 && !p.queued {
				// Its turn comes when what arrived before it is done.
				free := &n.free
				if p.to >= 0 {
					free = &n.rcvs[p.to].free
				}
				turn := maxTime(n.now, *free)
				*free = turn.Add(n.faults.cost)
				if turn.After(n.now) {
					p.at, p.queued = turn, true
					n.serial++
					p.serial = n.serial
					heap.Push(&n.q, p)
					continue
				}
			}
			if p.to < 0 {
				_ = n.sender.HandleControl(n.now, p.from, p.b)
				continue
			}
			rc := n.rcvs[p.to]
			if rc.stopped(n.now) {
				continue
			}
			_ = rc.r.HandleDatagram(n.now, p.from, p.b, simHandler{n, rc})
		}
		for _, rc := range n.rcvs {
			if d := rc.r.Deadline(); !d.IsZero() && !d.After(n.now) && !rc.stopped(n.now) {
				rc.r.Poll(n.now, simHandler{n, rc})
			}
		}
		if !n.now.Before(t) && len(n.q) == 0 {
			n.flushSender()
			if len(n.q) == 0 {
				return
			}
		}
		if !n.now.Before(t) {
			return
		}
	}
}

// stopped reports whether the receiver takes nothing at now: a stopped
// process, whose socket buffer overflows.
func (rc *simRcv) stopped(now time.Time) bool { return rc.paused || now.Before(rc.until) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// publish sends count messages, burst at a time every interval, each
// carrying its index in the first 8 bytes of a payload of size bytes.
func (n *simNet) publish(from, count, burst int, interval time.Duration, size int) {
	payload := make([]byte, max(size, 8))
	for i := from; i < from+count; i++ {
		binary.BigEndian.PutUint64(payload, uint64(i))
		m := transport.Message{Payload: payload}
		for {
			_, err := n.sender.Publish(n.now, &m)
			if err == nil {
				break
			}
			switch err {
			case ErrBackpressure:
				n.flushSender()
			case ErrFlowControl:
				// Held for a receiver: time passes until it reports or
				// times out.
				n.runUntil(n.now.Add(100 * time.Microsecond))
			default:
				n.t.Fatalf("publish %d: %v", i, err)
			}
		}
		if (i-from+1)%burst == 0 {
			n.runUntil(n.now.Add(interval))
		}
	}
}

// settle runs the network until everything in flight has been handled.
func (n *simNet) settle(d time.Duration) { n.runUntil(n.now.Add(d)) }

// indexes returns the payload indexes a receiver got, and its gaps.
func (rc *simRcv) indexes() (idx []int, gaps []transport.Gap) {
	for _, e := range rc.events {
		switch e.Kind {
		case transport.EventMessage:
			idx = append(idx, int(binary.BigEndian.Uint64(e.Message.Payload)))
		case transport.EventGap:
			gaps = append(gaps, e.Gap)
		}
	}
	return idx, gaps
}

// checkExactlyOnce fails unless rc got messages 0..count-1 once each, in
// order, with no gap.
func checkExactlyOnce(t testing.TB, rc *simRcv, count int) {
	t.Helper()
	idx, gaps := rc.indexes()
	if len(gaps) > 0 {
		t.Fatalf("receiver %d: %d gaps, first %v", rc.id, len(gaps), gaps[0])
	}
	if len(idx) != count {
		t.Fatalf("receiver %d: got %d messages, want %d (stats %+v)", rc.id, len(idx), count, rc.r.Stats())
	}
	for i, v := range idx {
		if v != i {
			t.Fatalf("receiver %d: message %d has index %d", rc.id, i, v)
		}
	}
}

// checkAccounting fails unless every sequence number from the stream's
// first event on is delivered or inside a gap, once, in order. With
// fragmented messages (strict false) a message may skip sequence numbers.
func checkAccounting(t testing.TB, rc *simRcv, strict bool) {
	t.Helper()
	next := map[transport.StreamID]uint64{}
	for _, e := range rc.events {
		switch e.Kind {
		case transport.EventStreamStart:
			next[e.Start.Stream] = e.Start.FirstSeq
		case transport.EventMessage:
			want, ok := next[e.Message.Stream]
			if !ok || e.Message.Seq < want {
				t.Fatalf("receiver %d: message seq %d, expected ≥ %d (started %v)", rc.id, e.Message.Seq, want, ok)
			}
			if strict && e.Message.Seq != want {
				t.Fatalf("receiver %d: message seq %d skips from %d", rc.id, e.Message.Seq, want)
			}
			next[e.Message.Stream] = e.Message.Seq + 1
		case transport.EventGap:
			want := next[e.Gap.Stream]
			if e.Gap.From < want || (strict && e.Gap.From != want) || e.Gap.To < e.Gap.From {
				t.Fatalf("receiver %d: %v, expected from %d", rc.id, e.Gap, want)
			}
			next[e.Gap.Stream] = e.Gap.To + 1
		}
	}
}

func (n *simNet) String() string {
	s := fmt.Sprintf("sender %+v", n.sender.Stats())
	for _, rc := range n.rcvs {
		s += fmt.Sprintf("\nreceiver %d %+v", rc.id, rc.r.Stats())
	}
	return s
}
