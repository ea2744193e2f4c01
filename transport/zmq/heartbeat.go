package zmq

import (
	"encoding/binary"
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
type liveness struct {
	interval, timeout time.Duration // interval 0: we send no PINGs
	nextPing          time.Time
	// timeoutAt is set when a PING was written and nothing has arrived
	// since; ttlAt when the peer's PING asked for a TTL and nothing has
	// arrived since.
	timeoutAt, ttlAt time.Time
	// lastRecv is when something last arrived.
	lastRecv time.Time
}

func newLiveness(now time.Time, interval, timeout time.Duration) liveness {
	l := liveness{interval: interval, timeout: timeout}
	if interval > 0 {
		l.nextPing = now.Add(interval)
	}
	return l
}

// received records that something arrived from the peer.
func (l *liveness) received(now time.Time) {
	l.timeoutAt, l.ttlAt, l.lastRecv = time.Time{}, time.Time{}, now
}

// pinged records a PING of the peer asking for ttl (0: none).
func (l *liveness) pinged(now time.Time, ttl time.Duration) {
	l.received(now)
	if ttl > 0 {
		l.ttlAt = now.Add(ttl)
	}
}

// pingWritten records that our PING, whose writing began at start, went
// out: the peer has timeout to show it is there, unless something
// arrived since start (its answer may come before the write returns).
func (l *liveness) pingWritten(start, now time.Time) {
	if l.timeoutAt.IsZero() && l.lastRecv.Before(start) {
		l.timeoutAt = now.Add(l.timeout)
	}
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
