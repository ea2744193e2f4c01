package statsd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// dogstatsdLines are DogStatsD events and service checks, and lines
// that only look like them. bad is 1 for a malformed event or service
// check: a bad line, never a metric.
var dogstatsdLines = []struct {
	line string
	want string
	bad  int
	why  Reason
}{
	{"_e{5,4}:title|text", "", 0, 0},
	{"_e{5,4}:title|text|d:1700000000|h:host|p:low|t:warning|#env:prod", "", 0, 0},
	// The lengths say where title and text end: both may hold '|' and
	// ':', and a newline is sent escaped, as "\\n".
	{`_e{6,10}:de|p:y|a|b\nc:1|c|#env:prod`, "", 0, 0},
	{"_e{6,2}:h\u00e9llo|ok|k:key|s:src", "", 0, 0},
	{"_e{1,0}:t|", "", 0, 0},
	{"_e{1,0}:t||#a:b", "", 0, 0},
	{"_e{5,4}:title|text\r", "", 0, 0},
	{"_sc|my.check|0", "", 0, 0},
	{"_sc|my.check|2|d:1700000000|h:host|#env:prod|m:disk: full", "", 0, 0},
	{"_sc|my.check|3|m:", "", 0, 0},
	{"_sc|web:8080|1", "", 0, 0},
	// Malformed: a bad line.
	{"_e{5,40}:title|text", "", 1, ReasonBadEvent},
	{"_e{5,4}:title|tex", "", 1, ReasonBadEvent},
	{"_e{4,4}:title|text", "", 1, ReasonBadEvent},
	{"_e{4,5}:title|text", "", 1, ReasonBadEvent},
	{"_e{6,3}:title|text", "", 1, ReasonBadEvent},
	{"_e{5,3}:title|text", "", 1, ReasonBadEvent},
	{"_e{0,4}:|text", "", 1, ReasonBadEvent},
	{"_e{,4}:title|text", "", 1, ReasonBadEvent},
	{"_e{5,}:title|text", "", 1, ReasonBadEvent},
	{"_e{x,4}:title|text", "", 1, ReasonBadEvent},
	{"_e{-5,4}:title|text", "", 1, ReasonBadEvent},
	{"_e{+5,4}:title|text", "", 1, ReasonBadEvent},
	{"_e{5}:title|text", "", 1, ReasonBadEvent},
	{"_e{5,4:title|text", "", 1, ReasonBadEvent},
	{"_e{5,4}title|text", "", 1, ReasonBadEvent},
	{"_e{5,4}", "", 1, ReasonBadEvent},
	{"_e{", "", 1, ReasonBadEvent},
	{"_e{99999999999999999999,1}:a|b", "", 1, ReasonBadEvent},
	{"_e{1,99999999999999999999}:a|b", "", 1, ReasonBadEvent},
	{"_sc|", "", 1, ReasonBadServiceCheck},
	{"_sc|my.check", "", 1, ReasonBadServiceCheck},
	{"_sc|my.check|", "", 1, ReasonBadServiceCheck},
	{"_sc||0", "", 1, ReasonBadServiceCheck},
	{"_sc|my.check|7", "", 1, ReasonBadServiceCheck},
	{"_sc|my.check|01", "", 1, ReasonBadServiceCheck},
	{"_sc|my.check|ok|m:x", "", 1, ReasonBadServiceCheck},
	// Not events nor service checks: metrics, as the exact prefixes
	// "_e{" and "_sc|" are missing.
	{"_e:1|c", "_e counter 1", 0, 0},
	{"_scale:2|c", "_scale counter 2", 0, 0},
	{"_sc:3|c", "_sc counter 3", 0, 0},
	{"e{5,4}:1|c", "e54 counter 1", 0, 0},
}

// TestParseEventsAndServiceChecks: DogStatsD events and service checks
// give no metric; a malformed one is one bad line. (They were parsed as
// metrics: "_sc|my.check|2|d:1700000000|h:host" a histogram
// "_scmy.check2d".)
func TestParseEventsAndServiceChecks(t *testing.T) {
	for _, tc := range dogstatsdLines {
		var p Parser
		ms, bad, why := p.AppendLine(nil, []byte(tc.line))
		if got := parsed(ms); got != tc.want || bad != tc.bad || why != tc.why {
			t.Errorf("%q:\n got %s, bad %d (%v)\nwant %s, bad %d (%v)", tc.line, got, bad, why, tc.want, tc.bad, tc.why)
		}
	}
}

// FuzzEventLengths: an event written with the byte lengths of its title
// and text is well formed, whatever they hold but a newline; with a
// length one off, it is not.
func FuzzEventLengths(f *testing.F) {
	f.Add("title", "text", "|#env:prod")
	f.Add("a|b:c", `x\ny|z`, "")
	f.Add("h\u00e9", "", "|p:low")
	f.Fuzz(func(t *testing.T, title, text, fields string) {
		if title == "" || strings.ContainsAny(title+text+fields, "\n\r") || fields != "" && fields[0] != '|' {
			t.Skip()
		}
		line := fmt.Sprintf("_e{%d,%d}:%s|%s%s", len(title), len(text), title, text, fields)
		var p Parser
		if ms, bad, why := p.AppendLine(nil, []byte(line)); len(ms) != 0 || bad != 0 {
			t.Fatalf("%q: %s, bad %d (%v)", line, parsed(ms), bad, why)
		}
		// One byte too many for the text: it reaches past the line, or
		// ends one byte into the fields, which start with '|' (unless
		// the fields are "|" or start "||": then the lengths still fit).
		if len(fields) == 1 || len(fields) > 1 && fields[1] == '|' {
			return
		}
		long := fmt.Sprintf("_e{%d,%d}:%s|%s%s", len(title), len(text)+1, title, text, fields)
		if ms, bad, _ := p.AppendLine(nil, []byte(long)); len(ms) != 0 || bad != 1 {
			t.Fatalf("%q: %s, bad %d, want 1", long, parsed(ms), bad)
		}
	})
}

// recordHandler keeps the messages logged, at every level.
type recordHandler struct {
	mu   *sync.Mutex
	msgs *[]string
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	h.mu.Lock()
	*h.msgs = append(*h.msgs, msg)
	h.mu.Unlock()
	return nil
}

// TestServerCountsEventsAndServiceChecks: the server counts DogStatsD
// events and service checks where its own counters are (SelfStats,
// Prometheus), and in metrics_received, which counts every line as
// Etsy's does, but not in bad_lines_seen; it makes no key of them and
// logs none of them; a malformed one is a bad line.
func TestServerCountsEventsAndServiceChecks(t *testing.T) {
	var (
		mu   sync.Mutex
		msgs []string
	)
	cfg := Config{Logger: slog.New(recordHandler{&mu, &msgs})}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	addr := s.UDPAddrs()[0].String()
	sendUDP(t, addr, strings.Join([]string{
		"_e{5,4}:title|text",
		`_e{6,11}:deploy|v2|ok\ndone|d:1700000000|h:host|p:low|t:warning|#env:prod`,
		"_sc|my.check|2|d:1700000000|h:host|#env:prod|m:disk: full",
		"x:1|c",
	}, "\n"))
	waitReceived(t, s, 1, 4)
	sendUDP(t, addr, "_e{5,40}:title|text\ny:2|c")
	waitReceived(t, s, 2, 6)
	snap := s.Flush(context.Background())

	got := snapshotValues(snap)
	checkValues(t, got, map[string]float64{"c x": 1, "c y": 2, "c statsd.metrics_received": 6, "c statsd.bad_lines_seen": 1})
	for k := range got {
		if !strings.HasPrefix(k, "c statsd.") && !strings.HasPrefix(k, "g statsd.") && k != "c x" && k != "c y" {
			t.Errorf("key %s made of an event or service check", k)
		}
	}
	self := map[string]float64{}
	for _, st := range snap.SelfStats() {
		self[st.Name] = st.Value
	}
	for name, want := range map[string]float64{"server.events_ignored": 2, "server.service_checks_ignored": 1} {
		if v, ok := self[name]; !ok || v != want {
			t.Errorf("SelfStats %s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	fams := parsePage(t, testPrometheus(t, PrometheusConfig{}).Render(snap))
	for name, want := range map[string]float64{"statsd_server_events_ignored_total": 2, "statsd_server_service_checks_ignored_total": 1} {
		if v, ok := lookup(fams, name, nil); !ok || v != want {
			t.Errorf("Prometheus %s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "_e{5,40}") || !strings.Contains(msgs[0], ReasonBadEvent.String()) {
		t.Errorf("logged %q, want only the malformed event", msgs)
	}
}
