package statsd

import (
	"fmt"
	"strings"
	"testing"
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
