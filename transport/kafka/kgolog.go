package kafka

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogEvery is how often the client's logger lets through a warning
// or an error with the same message: a broker that is down makes the
// client log each failed connection, several a second.
const kgoLogEvery = 10 * time.Second

// kgoLogKeys bounds the messages kgoLogger remembers. The client's are
// constant strings, far fewer; past the bound it forgets them all.
const kgoLogKeys = 64

// kgoLogger hands the client's (kgo's) log lines to Config.Logger: at
// the levels its handler enables, warnings and errors rate-limited, one
// line per message every kgoLogEvery, with the count of those not
// logged since (not_logged_since). That is how a connection to a broker that is down, which
// the client retries by itself and reports to no call, becomes visible.
type kgoLogger struct {
	log   *slog.Logger
	now   func() time.Time
	every time.Duration

	mu   sync.Mutex
	seen map[string]*kgoLogSeen
}

// kgoLogSeen is when a message was last logged, and how many times it
// came since without being logged.
type kgoLogSeen struct {
	at         time.Time
	suppressed int
}

func newKgoLogger(log *slog.Logger) *kgoLogger {
	return &kgoLogger{log: log, now: time.Now, every: kgoLogEvery, seen: map[string]*kgoLogSeen{}}
}

// Level is the most detailed level the handler of Config.Logger
// enables: none, for the default (discard), so that the client builds
// no log line at all.
func (l *kgoLogger) Level() kgo.LogLevel {
	ctx := context.Background()
	for _, lv := range kgoLevels {
		if l.log.Enabled(ctx, lv.slog) {
			return lv.kgo
		}
	}
	return kgo.LogLevelNone
}

// kgoLevel is one of the client's log levels and its slog level.
type kgoLevel struct {
	kgo  kgo.LogLevel
	slog slog.Level
}

// kgoLevels are the client's log levels, the most detailed first.
var kgoLevels = []kgoLevel{{kgo.LogLevelDebug, slog.LevelDebug}, {kgo.LogLevelInfo, slog.LevelInfo}, {kgo.LogLevelWarn, slog.LevelWarn}, {kgo.LogLevelError, slog.LevelError}}

// Log logs a line of the client; keyvals alternate keys and values.
func (l *kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	i := slices.IndexFunc(kgoLevels, func(lv kgoLevel) bool { return lv.kgo == level })
	if i < 0 {
		return
	}
	lv := kgoLevels[i].slog
	if lv >= slog.LevelWarn {
		n, ok := l.due(msg)
		if !ok {
			return
		}
		if n > 0 {
			keyvals = append(keyvals, "not_logged_since", n)
		}
	}
	l.log.Log(context.Background(), lv, "kafka transport: client: "+msg, keyvals...)
}

// due reports whether msg may be logged now, and how many times it came
// since it last was.
func (l *kgoLogger) due(msg string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.seen[msg]
	switch {
	case s == nil:
		if len(l.seen) >= kgoLogKeys {
			clear(l.seen)
		}
		l.seen[msg] = &kgoLogSeen{at: now}
		return 0, true
	case now.Sub(s.at) < l.every:
		s.suppressed++
		return 0, false
	}
	n := s.suppressed
	s.at, s.suppressed = now, 0
	return n, true
}
