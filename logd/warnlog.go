package logd

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// warnLimiter writes at most one WARN line per Config.WarnLogGap for
// one kind of connection trouble, so a flood of bad clients cannot flood
// the log; each line says how many more happened since the previous one
// (all of them are counted in /metrics). statsd's bad-line log works the
// same way.
type warnLimiter struct {
	mu       sync.Mutex
	last     time.Time
	unlogged uint64
}

// warn logs msg with args unless a line was logged less than gap ago.
func (l *warnLimiter) warn(log *slog.Logger, now time.Time, gap time.Duration, msg string, args ...any) {
	if !log.Enabled(context.Background(), slog.LevelWarn) {
		return
	}
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < gap {
		l.unlogged++
		l.mu.Unlock()
		return
	}
	unlogged := l.unlogged
	l.last, l.unlogged = now, 0
	l.mu.Unlock()
	log.Warn(msg+" (more are counted in /metrics, logged at most once per "+gap.String()+")", append(args, "unlogged_since_last", unlogged)...)
}

// connWarnings are the rate-limited warnings about connections.
type connWarnings struct {
	badRequest, slowRequest, refused warnLimiter
	// authFailed: refused SASL exchanges; unauthenticated: requests
	// before authentication.
	authFailed, unauthenticated warnLimiter
	// acksZeroFailed: connections closed on a failed acks=0 produce.
	acksZeroFailed warnLimiter
}

// warn logs through one of s.warnings' limiters.
func (s *Server) warn(l *warnLimiter, msg string, args ...any) {
	l.warn(s.cfg.Logger, s.cfg.Now(), s.cfg.WarnLogGap, msg, args...)
}
