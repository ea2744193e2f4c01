package zmq

import (
	"encoding/binary"
	"sync/atomic"
	"time"
)

// ZMTP 3.1 heartbeats (rfc.zeromq.org/spec/37): a PING carries a TTL
// (2 bytes, tenths of a second) and up to 16 bytes of context, which the
// PONG answering it echoes.
const (
	maxPingContext = 16 // libzmq truncates a longer context the same way
	maxPingTTL     = 0xFFFF * 100 * time.Millisecond
)

// liveness is the heartbeat state of one connection, sans-IO: every
// method takes the time, and the caller arms a timer at deadline. It
// does what libzmq's engine does with ZMQ_HEARTBEAT_IVL, _TIMEOUT and
// _TTL: a PING every interval; the connection is dead when nothing at
// all arrives within timeout of a PING written, or within the TTL the
// peer's last PING asked for; anything that arrives (data, a PONG, a
// PING) cancels both.
//
// What arrives is not dated as it arrives: the reader only raises a
// flag (traffic), which liveness reads and clears when the timer fires
// and when a PING is written or arrives, dating the traffic then. Every
// event that sets a deadline clears the flag, so at a deadline the flag
// says exactly whether something arrived since that event: the
// connection is dead at the same moment as if each read were dated,
// and a silent peer is closed at most PingInterval + PingTimeout after
// the last thing it sent (plus the time our PING takes to write and the
// timer's lateness). Only the moment a deadline is cancelled moves, to
// the next time the flag is read, which is no later than the deadline.
type liveness struct {
	interval, timeout time.Duration // interval 0: we send no PINGs
	nextPing          time.Time
	// timeoutAt is set when a PING was written and nothing has arrived
	// since; ttlAt when the peer's PING asked for a TTL and nothing has
	// arrived since.
	timeoutAt, ttlAt time.Time
}

func newLiveness(now time.Time, interval, timeout time.Duration) liveness {
	l := liveness{interval: interval, timeout: timeout}
	if interval > 0 {
		l.nextPing = now.Add(interval)
	}
	return l
}

// watched says whether the reader must report traffic from the start:
// when we send PINGs. A peer's PING asking for a TTL turns it on later.
func (l *liveness) watched() bool { return l.interval > 0 }

// received records that something arrived from the peer.
func (l *liveness) received() {
	l.timeoutAt, l.ttlAt = time.Time{}, time.Time{}
}

// pinged records a PING of the peer asking for ttl (0: none). It is
// traffic itself, so what t holds (the bytes of the PING among them) is
// cleared, and only what arrives after it counts against the TTL.
func (l *liveness) pinged(now time.Time, ttl time.Duration, t *traffic) {
	t.take()
	l.received()
	if ttl > 0 {
		t.watch()
		l.ttlAt = now.Add(ttl)
	}
}

// pingStarting records that our PING's writing begins: what arrived
// until now is taken from t, so that only what arrives from now on
// answers it.
func (l *liveness) pingStarting(t *traffic) {
	if seen, _ := t.take(); seen {
		l.received()
	}
}

// pingWritten records that our PING went out at now: the peer has
// timeout to show it is there, unless something arrived since its
// writing began (pingStarting; its answer may come before the write
// returns).
func (l *liveness) pingWritten(now time.Time, t *traffic) {
	if seen, _ := t.take(); seen {
		l.received()
		return
	}
	if l.timeoutAt.IsZero() {
		l.timeoutAt = now.Add(l.timeout)
	}
}

// tick is poll at a deadline, after taking what arrived since t was last
// read. A reader that is not waiting for the network is busy handing
// what it read to our application (held up by its receive queue): the
// silence is ours, and counts as traffic.
func (l *liveness) tick(now time.Time, t *traffic) (ping bool, dead deathCause) {
	if seen, waiting := t.take(); seen || !waiting {
		l.received()
	}
	return l.poll(now)
}

// poll says whether a PING is due (and schedules the next), and whether
// the peer is dead: errTimeout when our PING went unanswered, errTTL
// when its own TTL ran out.
func (l *liveness) poll(now time.Time) (ping bool, dead deathCause) {
	switch {
	case !l.timeoutAt.IsZero() && !now.Before(l.timeoutAt):
		return false, deadTimeout
	case !l.ttlAt.IsZero() && !now.Before(l.ttlAt):
		return false, deadTTL
	}
	if l.interval > 0 && !now.Before(l.nextPing) {
		l.nextPing = now.Add(l.interval)
		return true, alive
	}
	return false, alive
}

// deadline is when poll has something to say next (zero: never).
func (l *liveness) deadline() time.Time {
	var d time.Time
	for _, t := range []time.Time{l.nextPing, l.timeoutAt, l.ttlAt} {
		if !t.IsZero() && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	return d
}

// deathCause is why liveness holds a connection dead.
type deathCause uint8

const (
	alive deathCause = iota
	deadTimeout
	deadTTL
)

// pingBody is the body of a PING command asking for ttl.
func pingBody(ttl time.Duration) []byte {
	return binary.BigEndian.AppendUint16(nil, uint16(min(ttl, maxPingTTL)/(100*time.Millisecond)))
}

// parsePing splits a PING's body into its TTL and context (truncated to
// maxPingContext bytes); ok is false when it has no TTL.
func parsePing(body []byte) (ttl time.Duration, context []byte, ok bool) {
	if len(body) < 2 {
		return 0, nil, false
	}
	ttl = time.Duration(binary.BigEndian.Uint16(body)) * 100 * time.Millisecond
	context = body[2:]
	return ttl, context[:min(len(context), maxPingContext)], true
}

// traffic is what a connection's reader tells its liveness, with no
// lock and no clock on the reader's path: whether bytes arrived since
// liveness last looked (take), and whether the reader is waiting for
// the network now. Until watch, the reader reports nothing: with
// heartbeats off, and no TTL asked for by the peer, reads cost nothing.
type traffic struct {
	on   atomic.Bool
	bits atomic.Uint32
}

const (
	trafficWaiting = 1 << iota // the reader is in a network read
	trafficSeen                // bytes arrived since the last take
)

// watch makes the reader report from its next read on.
func (t *traffic) watch() { t.on.Store(true) }

// reading is called by the reader before a network read; it reports
// whether the reader reports (watch was called), to tell read.
func (t *traffic) reading() bool {
	if !t.on.Load() {
		return false
	}
	t.bits.Or(trafficWaiting)
	return true
}

// read is called after a network read that returned n bytes, when
// reading said true.
func (t *traffic) read(n int) {
	if n > 0 {
		t.bits.Store(trafficSeen) // and no longer waiting
	} else {
		t.bits.And(^uint32(trafficWaiting))
	}
}

// take reports and clears whether bytes arrived since the last take,
// and reports whether the reader is waiting for the network.
func (t *traffic) take() (seen, waiting bool) {
	b := t.bits.And(^uint32(trafficSeen))
	return b&trafficSeen != 0, b&trafficWaiting != 0
}
