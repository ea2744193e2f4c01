package zmq

import (
	"testing"
	"time"
)

// livenessSim drives a liveness and the traffic its reader reports in
// made-up time: a reader that waits for the network between reads, a
// writer that begins a PING lag after it became due (busy with a batch)
// and takes write to write it, and a peer that, with answer set,
// answers each PING that long after its writing began.
type livenessSim struct {
	l                  liveness
	t                  traffic
	now                time.Time
	lag, write, answer time.Duration
	startAt, writeEnd  time.Time // zero: no PING due, being written
	answers            []time.Time
	pings              int
	dead               deathCause
}

const simStep = 100 * time.Microsecond

func newLivenessSim(interval, timeout, lag, write time.Duration) *livenessSim {
	s := &livenessSim{now: time.Unix(1000, 0), lag: lag, write: write}
	s.l = newLiveness(s.now, interval, timeout)
	if s.l.watched() {
		s.t.watch()
	}
	s.t.reading()
	return s
}

// arrive is a read of n bytes, after which the reader waits again.
func (s *livenessSim) arrive(n int) {
	s.t.read(n)
	s.t.reading()
}

// step advances the time by simStep: the peer's answers due arrive, a
// PING written meanwhile goes out, a PING due begins, then the timer
// fires if a deadline passed.
func (s *livenessSim) step() {
	s.now = s.now.Add(simStep)
	for len(s.answers) > 0 && !s.now.Before(s.answers[0]) {
		s.arrive(9)
		s.answers = s.answers[1:]
	}
	if !s.writeEnd.IsZero() && !s.now.Before(s.writeEnd) {
		s.l.pingWritten(s.now, &s.t)
		s.writeEnd = time.Time{}
	}
	if !s.startAt.IsZero() && !s.now.Before(s.startAt) && s.writeEnd.IsZero() {
		s.pings++
		s.l.pingStarting(&s.t)
		s.startAt, s.writeEnd = time.Time{}, s.now.Add(s.write)
		if s.answer > 0 {
			s.answers = append(s.answers, s.now.Add(s.answer))
		}
	}
	if d := s.l.deadline(); !d.IsZero() && !s.now.Before(d) {
		ping, dead := s.l.tick(s.now, &s.t)
		if dead != alive {
			s.dead = dead
			return
		}
		if ping && s.startAt.IsZero() {
			s.startAt = s.now.Add(s.lag)
		}
	}
}

// TestLivenessDataIsLiveness: a peer that sends data but never answers
// a PING stays alive; once it falls silent, it is held dead no sooner
// than timeout after the last thing it sent, and no later than one
// interval (and a PING's writing) more, wherever its last data falls
// among our PINGs: between a PING becoming due and its writing, and
// during its writing, included.
func TestLivenessDataIsLiveness(t *testing.T) {
	const (
		interval = 10 * time.Millisecond
		timeout  = 30 * time.Millisecond
		lag      = 2 * time.Millisecond
		write    = 300 * time.Microsecond
		every    = 2 * time.Millisecond // < timeout: data keeps it alive
	)
	for shift := time.Duration(0); shift < interval; shift += simStep {
		s := newLivenessSim(interval, timeout, lag, write)
		start := s.now
		var last time.Time
		for s.now.Sub(start) < 50*interval+shift {
			s.step()
			if s.dead != alive {
				t.Fatalf("shift %v: a peer sending data every %v held dead (%d) after %v, %d PINGs", shift, every, s.dead, s.now.Sub(start), s.pings)
			}
			if s.now.Sub(start)%every == 0 {
				s.arrive(64)
				last = s.now
			}
		}
		if s.pings < 45 {
			t.Fatalf("shift %v: %d PINGs in 50 intervals", shift, s.pings)
		}
		for s.dead == alive && s.now.Sub(last) < time.Second {
			s.step()
		}
		if s.dead != deadTimeout {
			t.Fatalf("shift %v: a silent peer not held dead (%d) after %v", shift, s.dead, s.now.Sub(last))
		}
		if since := s.now.Sub(last); since < timeout || since > interval+write+timeout+simStep {
			t.Errorf("shift %v: held dead %v after its last data, want within [%v, %v]", shift, since, timeout, interval+write+timeout+simStep)
		}
	}
}

// TestLivenessTTL: a peer's PING asking for a TTL makes the connection
// dead at the TTL unless something arrives after the PING: what arrived
// with or before it does not count, and neither does a silence while
// our reader waits for our application.
func TestLivenessTTL(t *testing.T) {
	const ttl = 50 * time.Millisecond
	for _, tc := range []struct {
		name  string
		after bool // data arrives after the PING
		busy  bool // our reader is busy, not waiting for the network, at the TTL
		dead  bool
	}{
		{"silent", false, false, true},
		{"data after", true, false, false},
		{"our reader busy", false, true, false},
	} {
		s := newLivenessSim(0, 0, 0, 0)
		if s.t.on.Load() {
			t.Fatal("traffic watched with heartbeats off")
		}
		s.t.watch() // as a first PING turns it on: the bytes before it were reported
		s.arrive(64)
		s.t.read(9) // the PING's own read
		s.l.pinged(s.now, ttl, &s.t)
		if !tc.busy { // else it hands what came with the PING to our application
			s.t.reading()
		}
		if tc.after {
			s.now = s.now.Add(ttl / 2)
			s.arrive(64)
		}
		for s.dead == alive && s.now.Before(time.Unix(1000, 0).Add(2*ttl)) {
			s.step()
		}
		if got := s.dead != alive; got != tc.dead {
			t.Errorf("%s: dead %v (%d) at %v, want %v", tc.name, got, s.dead, s.now.Sub(time.Unix(1000, 0)), tc.dead)
		}
		if tc.dead && s.now.Before(time.Unix(1000, 0).Add(ttl)) {
			t.Errorf("%s: dead at %v, before the TTL %v", tc.name, s.now.Sub(time.Unix(1000, 0)), ttl)
		}
	}
}

// TestTrafficOffCostsNothing: with heartbeats off, the reader's report
// is a load of one flag: no write.
func TestTrafficOffCostsNothing(t *testing.T) {
	var tr traffic
	if tr.reading() {
		t.Fatal("an unwatched reader reports")
	}
	if b := tr.bits.Load(); b != 0 {
		t.Fatalf("an unwatched reader wrote %#x", b)
	}
	tr.watch()
	if !tr.reading() {
		t.Fatal("a watched reader does not report")
	}
	tr.read(10)
	if seen, waiting := tr.take(); !seen || waiting {
		t.Fatalf("after a read: seen %v waiting %v", seen, waiting)
	}
	if seen, _ := tr.take(); seen {
		t.Fatal("take does not clear seen")
	}
}

// TestLivenessAnswerDuringWrite: a peer that sends nothing but answers
// to our PINGs stays alive when each answer arrives before the writing
// of the PING returns, even with a timeout shorter than the interval.
func TestLivenessAnswerDuringWrite(t *testing.T) {
	s := newLivenessSim(10*time.Millisecond, 3*time.Millisecond, time.Millisecond, 2*time.Millisecond)
	s.answer = time.Millisecond
	for s.pings < 100 {
		s.step()
		if s.dead != alive {
			t.Fatalf("a peer answering during the write held dead (%d) after %d PINGs", s.dead, s.pings)
		}
	}
	s.answer = 0
	for range 1000 {
		s.step()
	}
	if s.dead != deadTimeout {
		t.Fatalf("a peer that stopped answering not held dead (%d)", s.dead)
	}
}
