package reliable

import (
	"net/netip"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// minChunk is the least payload worth starting a fragment in the space
// left at the end of a datagram.
const minChunk = 64

// Sender is the publishing half of the protocol, without I/O. It assigns
// sequence numbers, packs messages into datagrams up to the MTU, keeps a
// bounded retransmit window, answers NACKs with NCFs, rate-limited
// repairs and LOST notices, and sends heartbeats when idle.
//
// Feed it with Publish and HandleControl; drain it with NextOutgoing;
// call NextOutgoing again no later than Deadline. A Sender is not safe for
// concurrent use.
type Sender struct {
	cfg    SenderConfig
	id     transport.StreamID
	win    window
	open   *sent // datagram being filled; nil when none
	base   int64 // Unix nanoseconds of the open datagram's first message
	next   uint64
	closed bool
	ends   int       // END datagrams still to send
	ended  bool      // the first END went: no new data goes after it
	endAt  time.Time // when the next END is due
	endGap time.Duration

	sentNext  uint64 // first sequence number not yet handed out
	beatAt    time.Time
	beatEvery time.Duration

	repairs ring[repairJob]
	control packetQueue
	bucket  tokenBucket
	ranges  []Range // scratch for NCF and LOST ranges
	lost    []Range
	ncf     []Range // NCF ranges not sent yet, ascending and disjoint (sender_nack.go)
	maxWire int     // ranges that fit one control datagram

	budgets budgets // per NACK source (budget.go)
	flow    flow    // receivers waited for (flow.go)

	// nackVisits counts the window's datagrams NACKs walked: a NACK's
	// work, which tests bound.
	nackVisits uint64

	mtu    int     // MTU less the authentication trailer, if any
	sealer *sealer // nil without a key
	opener *opener // checks NACKs; nil without a key

	stats SenderStats
}

// senderKeys is how many receivers' subkeys a Sender keeps (auth.go),
// at least: as many as the NACK sources it budgets (MaxNackSources) and
// the receivers its flow control tracks (Flow.MaxReceivers), so that
// each receiver's subkey is derived once. With fewer, past 256 receivers
// the subkeys were evicted in turn, and the derivation budget dropped
// most of their STATUS and NACKs (TestFlowManyKeyedReceivers).
const senderKeys = 256

func (c *SenderConfig) keysKept() int {
	n := max(senderKeys, c.MaxNackSources)
	if c.Flow.Mode != FlowNone {
		n = max(n, c.Flow.MaxReceivers)
	}
	return n
}

// NewSender returns a Sender whose first heartbeat is due at now.
func NewSender(cfg SenderConfig, now time.Time) (*Sender, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Session == 0 {
		cfg.Session = NewSession(now, cfg.Rand)
	}
	mtu := cfg.MTU
	if cfg.Key != nil {
		cfg.Key = append([]byte(nil), cfg.Key...)
		mtu -= TrailerLen
	}
	s := &Sender{
		cfg:       cfg,
		id:        transport.StreamID{Feed: cfg.Feed, Session: cfg.Session},
		win:       newWindow(cfg.WindowDatagrams, cfg.WindowBytes, mtu),
		next:      1,
		sentNext:  1,
		beatAt:    now,
		beatEvery: cfg.HeartbeatMin,
		repairs:   newRing[repairJob](cfg.MaxPendingRepairs),
		control:   newPacketQueue(64, mtu),
		bucket:    newTokenBucket(cfg.RepairRate, cfg.RepairBurst, now),
		maxWire:   min(MaxWireRanges, (mtu-rangesHead)/rangeLen),
		mtu:       mtu,
	}
	s.ncf = make([]Range, 0, s.maxWire)
	s.budgets = newBudgets(&s.cfg, now)
	s.flow = flow{cfg: cfg.Flow, keyed: cfg.Key != nil, stats: &s.stats}
	if cfg.Key != nil {
		s.sealer = newSealer(cfg.Key)
		s.opener = newOpener(cfg.Key, cfg.keysKept(), now)
		s.opener.antiReplay = true
	}
	return s, nil
}

// Stream is the sender's stream identity.
func (s *Sender) Stream() transport.StreamID { return s.id }

// Stats returns the counters.
func (s *Sender) Stats() SenderStats { return s.stats }

// NextSeq is the sequence number the next message will take.
func (s *Sender) NextSeq() uint64 { return s.next }

// SentNext is the first sequence number NextOutgoing has not yet handed
// out in a DATA datagram: every message below it has left at least once.
// Read after each NextOutgoing, it tells which sequence numbers that
// datagram carried for the first time, [previous SentNext, SentNext),
// an empty range for a repair, heartbeat or control datagram.
func (s *Sender) SentNext() uint64 { return s.sentNext }

// Idle reports whether every datagram built so far has been handed out:
// messages, NCF and LOST notices, and the END datagrams after Close.
// Repairs waiting for the rate limit do not count.
func (s *Sender) Idle() bool {
	return (s.win.unsent == 0 || s.ended) && s.open == nil && s.control.len() == 0 && len(s.ncf) == 0 && s.ends == 0
}

// Publish packs m into datagrams and returns its sequence number (the
// first of its fragments). A zero m.Time is replaced by now. m's bytes are
// copied. It returns ErrBackpressure when the send queue cannot take the
// message yet, ErrTooLarge for an oversized message.
func (s *Sender) Publish(now time.Time, m *transport.Message) (uint64, error) {
	if s.closed {
		return 0, ErrClosed
	}
	if len(m.Payload) > s.cfg.MaxMessageSize {
		return 0, ErrTooLarge
	}
	t := m.Time.UnixNano()
	if m.Time.IsZero() {
		t = now.UnixNano()
	}
	meta, err := metaSize(m, 0)
	if err != nil {
		return 0, err
	}
	meta += 10 + uvarintLen(uint64(len(m.Payload))) // time delta and fragment total, at most
	room := s.mtu - dataHeadLen - frameHeadLen
	if meta+minChunk > room {
		return 0, ErrTooLarge
	}
	// Fragments after the first carry room bytes each; the first may
	// move to a fresh datagram, closing the open one.
	if s.flow.on() && !s.flowRoom(now, 2+len(m.Payload)/room) {
		s.flow.held = true
		s.stats.FlowHeld++
		return 0, ErrFlowControl
	}
	if s.win.unsent+3+len(m.Payload)/room > s.cfg.MaxQueued {
		if s.flow.on() && !s.mayHandOut(now, len(s.win.at(s.win.n-s.win.unsent).buf)) {
			// The queue is full because flow control holds it.
			s.flow.held = true
			s.stats.FlowHeld++
			return 0, ErrFlowControl
		}
		s.stats.Backpressure++
		return 0, ErrBackpressure
	}
	s.flow.held = false
	seq := s.next
	if !s.pack(m, t, meta) {
		s.stats.Backpressure++
		return 0, ErrBackpressure
	}
	s.stats.Messages++
	return seq, nil
}

// flowRoom checks, under flow control, that a message taking at most
// datagrams new datagrams may be built: enough receivers are known, and
// the retransmit window can open those datagrams without evicting one
// the slowest receiver still needs. (How far ahead of it datagrams may
// be sent is mayHandOut's business.)
func (s *Sender) flowRoom(now time.Time, datagrams int) bool {
	next, _, ok := s.flow.slowest(now)
	return ok && (next == ^uint64(0) || s.win.canOpen(datagrams, next))
}

// mayHandOut reports whether the next unsent datagram, of n bytes, may
// go: under flow control, what has been sent past the slowest
// receiver's position, with it, must stay within the window of bytes
// it announced (a datagram goes anyway when nothing is ahead of it).
func (s *Sender) mayHandOut(now time.Time, n int) bool {
	if !s.flow.on() {
		return true
	}
	next, window, ok := s.flow.slowest(now)
	if ok && next != ^uint64(0) {
		if ahead := s.win.sentFrom(next); ahead > 0 && ahead+n > int(window) {
			s.flow.sendHeld = true
			return false
		}
	}
	s.flow.sendHeld = false
	return true
}

// pack writes m as one frame, or as fragments when it does not fit one
// datagram. meta bounds the size of the first frame's metadata.
func (s *Sender) pack(m *transport.Message, t int64, meta int) bool {
	p := m.Payload
	flags := uint8(frameBegin)
	for {
		if s.open != nil {
			free := cap(s.open.buf) - len(s.open.buf) - frameHeadLen
			if flags&frameBegin != 0 {
				free -= meta
			}
			switch {
			case len(p) <= free:
				s.appendFrame(flags|frameEnd, m, t, len(m.Payload), p)
				return true
			case free >= minChunk && free < len(p):
				s.appendFrame(flags, m, t, len(m.Payload), p[:free])
				p, flags = p[free:], 0
				continue
			}
			if s.cfg.PadFull {
				s.pad()
			}
			s.closeOpen()
		}
		if !s.openDatagram(t) {
			return false
		}
	}
}

func (s *Sender) openDatagram(t int64) bool {
	d := s.win.open()
	if d == nil {
		return false
	}
	d.first = s.next
	d.buf = appendDataHead(d.buf, s.id, s.next, s.win.low(s.next), t)
	if !s.flow.on() {
		d.buf[headerLen] |= dataFlagNoFlow
	}
	s.open, s.base = d, t
	return true
}

func (s *Sender) appendFrame(flags uint8, m *transport.Message, t int64, total int, chunk []byte) {
	s.open.buf = appendFrame(s.open.buf, flags, m, t-s.base, total, chunk)
	s.open.count++
	s.next++
	s.stats.Frames++
	if s.open.count == 0xFFFF {
		s.closeOpen()
	}
}

// pad fills the open datagram with zeros to the MTU and marks it
// padded (SenderConfig.PadFull).
func (s *Sender) pad() {
	b := s.open.buf
	b[headerLen] |= dataFlagPadded
	s.open.buf = append(b, make([]byte, s.mtu-len(b))...)
}

func (s *Sender) closeOpen() {
	putDataCount(s.open.buf, s.open.count)
	s.win.close()
	s.open = nil
}

// Flush closes the datagram being filled so that NextOutgoing hands it
// out. NextOutgoing also does this by itself when nothing else waits.
func (s *Sender) Flush() {
	if s.open != nil {
		s.closeOpen()
	}
}

// Close flushes and queues the END datagrams that tell receivers the
// session is over. Later Publish calls fail with ErrClosed.
func (s *Sender) Close() {
	if s.closed {
		return
	}
	s.Flush()
	s.closed = true
	s.ends, s.endAt, s.endGap = EndRepeats, time.Time{}, s.cfg.HeartbeatMin
}

// EndRepeats is how many END datagrams a closing Sender sends: the
// first at once, the others HeartbeatMin, then twice as long, apart
// (1+2+4+8 ms by default), so that a loss, or a burst of them, rarely
// takes them all (at 20% random loss, all five are lost once in 3,125
// closes; two were lost once in 25).
const EndRepeats = 5

// Deadline is when NextOutgoing next has something to send if nothing
// else happens first; it is at or before the last now seen when there is
// something to send already.
func (s *Sender) Deadline(now time.Time) time.Time {
	sendable := (s.win.unsent > 0 && !s.ended || s.open != nil) && !s.flow.sendHeld
	if s.control.len() > 0 || len(s.ncf) > 0 || sendable || s.ends > 0 && !now.Before(s.endAt) {
		return now
	}
	at := s.beatAt
	if s.closed {
		at = time.Time{} // no heartbeats after Close
	}
	if s.ends > 0 {
		at = earliest(at, s.endAt)
	}
	if s.repairs.size > 0 {
		d := s.win.find(s.repairs.peek().first)
		size := s.mtu
		if d >= 0 {
			size = len(s.win.at(d).buf)
		}
		at = earliest(at, s.bucket.ready(now, size))
	}
	if s.flow.held || s.flow.sendHeld {
		// A receiver timing out may let the held data go on.
		at = earliest(at, s.flow.expiry())
	}
	if s.closed && s.ends == 0 {
		at = time.Time{}
	}
	return at
}

// NextOutgoing copies the next datagram due at now into buf (which must
// hold MTU bytes) and returns its length and destination: the group when
// to is not valid, else one receiver. ok is false when nothing is due.
// With a key, the datagram ends with its authentication trailer.
//
// Order: NCF and LOST notices, then repairs (as the rate limit allows),
// then new data, then END, then a heartbeat if one is due.
func (s *Sender) NextOutgoing(now time.Time, buf []byte) (n int, to netip.AddrPort, ok bool) {
	n, to, ok = s.nextOutgoing(now, buf)
	if ok && s.sealer != nil {
		n = s.sealer.seal(buf, n)
	}
	return n, to, ok
}

func (s *Sender) nextOutgoing(now time.Time, buf []byte) (n int, to netip.AddrPort, ok bool) {
	if s.flow.held || s.flow.sendHeld {
		s.flow.expire(now) // the Deadline it woke for: data may go on
	}
	s.flushNcf()
	if s.control.len() > 0 {
		return s.control.pop(buf), netip.AddrPort{}, true
	}
	if n, to, ok = s.nextRepair(now, buf); ok {
		return n, to, ok
	}
	if s.win.unsent == 0 && s.open != nil {
		s.closeOpen()
	}
	if s.win.unsent > 0 && !s.ended && s.mayHandOut(now, len(s.win.at(s.win.n-s.win.unsent).buf)) {
		d := s.win.takeUnsent()
		s.sentNext = d.first + uint64(d.count)
		s.stats.Datagrams++
		s.stats.Bytes += uint64(len(d.buf))
		s.beatEvery = s.cfg.HeartbeatMin
		s.beatAt = now.Add(s.beatEvery)
		return copy(buf, d.buf), netip.AddrPort{}, true
	}
	if s.ends > 0 && !now.Before(s.endAt) {
		if !s.ended {
			// What flow control still holds is never sent: the END
			// names it, so receivers report it as a Gap.
			s.ended = true
			s.stats.UnsentAtClose = s.next - s.sentNext
		}
		s.ends--
		s.endAt, s.endGap = now.Add(s.endGap), 2*s.endGap
		return s.beat(buf, TypeEnd), netip.AddrPort{}, true
	}
	if !s.closed && !now.Before(s.beatAt) {
		s.stats.Heartbeats++
		s.beatAt = now.Add(s.beatEvery)
		s.beatEvery = min(2*s.beatEvery, s.cfg.HeartbeatMax)
		return s.beat(buf, TypeHeartbeat), netip.AddrPort{}, true
	}
	return 0, netip.AddrPort{}, false
}

func (s *Sender) beat(buf []byte, t PacketType) int {
	next := s.sentNext
	if t == TypeEnd {
		// The END names every message published, sent or not.
		next = s.next
	}
	b := AppendBeat(buf[:0], t, s.id, Beat{Next: next, Low: s.win.low(s.sentNext)})
	return len(b)
}

// Unsent reports the messages published but not handed out (held by
// flow control, or not yet sent): their sequence numbers from..to and
// how many messages they are; messages is 0 when there are none. After
// Close, once the END has gone, they never will be.
func (s *Sender) Unsent() (from, to uint64, messages int) {
	if s.next == s.sentNext {
		return 0, 0, 0
	}
	var frames []Frame
	count := func(b []byte) {
		_, frames, _ = ParseData(b, frames)
		for j := range frames {
			if frames[j].Begin() {
				messages++
			}
		}
	}
	for i := s.win.n - s.win.unsent; i < s.win.n; i++ {
		count(s.win.at(i).buf)
	}
	if s.open != nil {
		b := append([]byte(nil), s.open.buf...)
		putDataCount(b, s.open.count)
		count(b)
	}
	return s.sentNext, s.next - 1, messages
}

func (s *Sender) nextRepair(now time.Time, buf []byte) (int, netip.AddrPort, bool) {
	for s.repairs.size > 0 {
		job := *s.repairs.peek()
		i := s.win.find(job.first)
		if i < 0 {
			s.repairs.pop()
			s.stats.RepairsGone++
			continue
		}
		d := s.win.at(i)
		if !s.bucket.take(now, len(d.buf)) {
			return 0, netip.AddrPort{}, false
		}
		s.repairs.pop()
		d.queued = false
		d.lastRepair, d.askedBy = now, job.asker
		s.stats.Repairs++
		s.stats.RepairBytes += uint64(len(d.buf))
		n := copy(buf, d.buf)
		buf[headerLen] |= dataFlagRepair
		if job.unicast {
			if s.budgets.mayUnicast(job.asker, n) {
				return n, job.asker, true
			}
			s.stats.RepairsToGroup++ // see antiAmplification
		}
		return n, netip.AddrPort{}, true
	}
	return 0, netip.AddrPort{}, false
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
