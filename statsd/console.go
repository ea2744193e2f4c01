package statsd

import (
	"context"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Console writes each flush as JSON lines, one object per metric:
//
//	{"ts":1700000000,"type":"counter","key":"api.hits;env=prod","values":{"count":4,"rate":0.4}}
//
// with type counter, gauge, timer, set or, with ConsoleConfig.Self,
// self (the server's own metrics, key "statsd.server.*"). Numbers are
// written as JavaScript does; NaN and infinities, which JSON lacks, as
// null.
type Console struct {
	cfg ConsoleConfig
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// ConsoleConfig configures the console backend.
type ConsoleConfig struct {
	// Self adds the server's own metrics: Etsy's counters and gauge of
	// the server (statsd.packets_received, metrics_received,
	// bad_lines_seen, timestamp_lag) and SelfStats, some 25 lines a
	// flush. Default off: a console is for watching what arrives.
	Self bool
}

// NewConsole writes to w.
func NewConsole(w io.Writer, cfg ConsoleConfig) *Console { return &Console{cfg: cfg, w: w} }

// Name is "console".
func (c *Console) Name() string { return "console" }

// Flush writes the snapshot.
func (c *Console) Flush(_ context.Context, s *Snapshot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := appendJSONLines(c.buf[:0], s, c.cfg.Self, nil)
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// appendJSONLines appends a snapshot's JSON lines to b, one a metric
// (with self, the server's own metrics too), and calls line, if not nil,
// with each metric's key and line (without its newline, valid only during
// the call). It stops at line's first error.
func appendJSONLines(b []byte, s *Snapshot, self bool, line func(key string, l []byte) error) ([]byte, error) {
	var err error
	add := func(typ, key string, values []Stat) {
		if err != nil {
			return
		}
		start := len(b)
		b = jsonLine(b, s.Timestamp, typ, key, values)
		if line != nil {
			err = line(key, b[start:len(b)-1])
		}
	}
	for _, v := range s.Counters {
		if v.Own && !self {
			continue
		}
		add("counter", v.Key, []Stat{{"count", v.Count}, {"rate", v.Rate}})
	}
	for _, v := range s.Gauges {
		if v.Own && !self {
			continue
		}
		add("gauge", v.Key, []Stat{{"value", v.Value}})
	}
	for _, v := range s.Timers {
		add("timer", v.Key, v.Stats)
	}
	for _, v := range s.Sets {
		add("set", v.Key, []Stat{{"count", float64(v.Count)}})
	}
	if self {
		for _, st := range s.SelfStats() {
			add("self", "statsd."+st.Name, []Stat{{"value", st.Value}})
		}
	}
	return b, err
}

func jsonLine(b []byte, ts int64, typ, key string, values []Stat) []byte {
	b = append(b, `{"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","key":`...)
	b = appendJSONString(b, key)
	b = append(b, `,"values":{`...)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v.Name)
		b = append(b, ':')
		if f := v.Value; f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			b = append(b, "null"...)
		} else {
			b = appendJSNumber(b, f)
		}
	}
	return append(b, "}}\n"...)
}

// appendJSONString appends s as a JSON string (RFC 8259): '"', '\\' and
// the control characters escaped, invalid UTF-8 as U+FFFD. (Go's
// strconv.Quote is not JSON: it writes "\x01".) Keys not sanitized
// (keyNameSanitize: false) may hold any byte but '\n'.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
