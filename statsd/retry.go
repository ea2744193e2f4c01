package statsd

import "time"

// The pauses between the retries of a read (or an accept) that keeps
// failing: the first, and the most, doubling in between.
const (
	minReadPause = 5 * time.Millisecond
	maxReadPause = time.Second
)

// readBackoff paces the retries of one listener's failing reads, with
// no I/O: a read error that persists (ENOBUFS, EMFILE, a descriptor
// closed under the reader) must not spin a core retrying at once, nor
// write a log line per retry. The caller counts every failure, pauses
// for what failed returns and logs when it says so.
type readBackoff struct {
	pause time.Duration // the last pause; 0 after a read that worked
	// unlogged counts the failures since the last logged one.
	unlogged uint64
	lastLog  time.Time
	logged   bool // lastLog is set
}

// failed records a failed read at now and returns the pause before the
// next read: minReadPause after a read that worked, then twice the last,
// at most maxReadPause. logNow is true at most once every gap, and
// failures is then how many reads failed since the last log, this one
// included.
func (b *readBackoff) failed(now time.Time, gap time.Duration) (pause time.Duration, logNow bool, failures uint64) {
	b.pause = min(max(2*b.pause, minReadPause), maxReadPause)
	b.unlogged++
	if b.logged && now.Sub(b.lastLog) < gap {
		return b.pause, false, 0
	}
	b.lastLog, b.logged = now, true
	failures, b.unlogged = b.unlogged, 0
	return b.pause, true, failures
}

// succeeded records a read that worked: the next failure pauses
// minReadPause again.
func (b *readBackoff) succeeded() { b.pause = 0 }

// readFailed counts a failed read of a listener (what names it in the
// log), logs it unless one was logged less than BadLineLogGap ago, and
// pauses before the listener retries. The pause ends early when the
// server closes: the retry then sees the listener closed.
func (s *Server) readFailed(b *readBackoff, what string, err error) {
	s.counters.readErrors.Add(1)
	pause, logNow, failures := b.failed(s.cfg.Now(), s.cfg.BadLineLogGap)
	if logNow {
		s.log.Warn("statsd: read failed, retrying after a pause (more failures are counted, not logged, for a while)",
			"listener", what, "err", err, "failures", failures, "pause", pause)
	}
	s.pause(pause)
}

// sleep is Server.pause outside tests: it waits d, or until the server
// closes.
func (s *Server) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.quit:
	}
}
