package statsd

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// parsed renders metrics for comparison: "key type value [@rate]".
func parsed(ms []Metric) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(" ; ")
		}
		switch m.Type {
		case Set:
			fmt.Fprintf(&b, "%s %v %q", m.Key, m.Type, m.Member)
		case Sequence:
			fmt.Fprintf(&b, "%s %v %d", m.Key, m.Type, m.Seq)
		default:
			fmt.Fprintf(&b, "%s %v %v", m.Key, m.Type, m.Value)
		}
		if m.Delta {
			b.WriteString(" delta")
		}
		if m.Rate != 1 {
			fmt.Fprintf(&b, " @%v", m.Rate)
		}
	}
	return b.String()
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string
		bad  int
		why  Reason
	}{
		{"a:1|c", "a counter 1", 0, 0},
		{"a:1|c|@0.1", "a counter 1 @0.1", 0, 0},
		{"a:-2.5|c|@.5", "a counter -2.5 @0.5", 0, 0},
		{"a:1e3|c", "a counter 1000", 0, 0},
		{"a: 7 |c", "a counter 7", 0, 0},
		{"g:42|g", "g gauge 42", 0, 0},
		{"g:+4|g", "g gauge 4 delta", 0, 0},
		{"g:-4|g", "g gauge -4 delta", 0, 0},
		{"t:320|ms", "t timer 320", 0, 0},
		{"t:320|ms|@0.25", "t timer 320 @0.25", 0, 0},
		{"h:-3|h", "h histogram -3", 0, 0},
		{"d:3.5|d", "d distribution 3.5", 0, 0},
		{"u:alice|s", `u set "alice"`, 0, 0},
		{"u:|s", `u set "0"`, 0, 0},
		{"a:1|c\r", "a counter 1", 0, 0},
		// Etsy's several values per line, DogStatsD's packed values.
		{"a:1|c:2|ms", "a counter 1 ; a timer 2", 0, 0},
		{"a:1|c|@0.5:2|ms", "a counter 1 @0.5 ; a timer 2", 0, 0},
		{"a:1:2:3|ms", "a timer 1 ; a timer 2 ; a timer 3", 0, 0},
		{"a:1:2|c|@0.1", "a counter 1 @0.1 ; a counter 2 @0.1", 0, 0},
		// Tags: part of the key, sorted, ':' → '=' once, repeats dropped.
		{"a:1|c|#b:2,a:1", "a;a=1;b=2 counter 1", 0, 0},
		{"a:1|c|@0.5|#env:prod,env:prod,,x", "a;env=prod;x counter 1 @0.5", 0, 0},
		{"a:1|c|#k:v:w", "a;k=vw counter 1", 0, 0},
		{"a:1|c|#t;u", "a;t_u counter 1", 0, 0},
		// Every ';' of a tag becomes '_' (Etsy turns only the first),
		// so a tag never splits into two in the key and the key's tags
		// stay sorted: one tag set, one key.
		{"x:1|c|#b;c;a", "x;b_c_a counter 1", 0, 0},
		{"x:1|c|#d,b;c;a", "x;b_c_a;d counter 1", 0, 0},
		{"x:1|c|#b;c;a,d", "x;b_c_a;d counter 1", 0, 0},
		{"x:1|c|#a,b;c", "x;a;b_c counter 1", 0, 0},
		{"x:1|c|#k;;v:w;", "x;k__v=w_ counter 1", 0, 0},
		{"a:1|c|#a b", "a;a_b counter 1", 0, 0},
		{"a:1|c|#b,a|@0.5", "a;a;b counter 1 @0.5", 0, 0},
		// A tag with an empty value or name is no tag: the key is the
		// untagged one's (Prometheus has no empty label; carbon refuses
		// both).
		{"a:1|c|#env:,:x,k:v", "a;k=v counter 1", 0, 0},
		{"a:1|c|#env:", "a counter 1", 0, 0},
		// DogStatsD container id and timestamp: accepted, not used.
		{"a:1|c|c:abc123|T1700000000", "a counter 1", 0, 0},
		{"a:1|g|#t:1|c:ci-9|T1700000000|e:it-x", "a;t=1 gauge 1", 0, 0},
		// Other DogStatsD fields, known (card: the cardinality, newer
		// agents) or not, are ignored as the Datadog agent ignores
		// them: a field "key:value" anywhere, and any field after
		// another (Etsy, too, ignores what follows its rate); only the
		// first field after the type must be one Etsy or DogStatsD
		// knows ("a:1|c|x" below).
		{"a:1|c|card:high", "a counter 1", 0, 0},
		{"a:1|g|#t:1|c:ci-9|card:orchestrator|T1700000000", "a;t=1 gauge 1", 0, 0},
		{"a:1|c|@0.5|card:low|#t", "a;t counter 1 @0.5", 0, 0},
		{"a:1|c|x:foo|@0.5", "a counter 1 @0.5", 0, 0},
		{"a:1|c|newfield:a:b|#t", "a;t counter 1", 0, 0},
		{"a:1|c|@0.5|x", "a counter 1 @0.5", 0, 0},
		{"a:1|c|#t|x|y", "a;t counter 1", 0, 0},
		{"a:1|c|@0.5|x:foo|T17", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|", "a counter 1 @0.5", 0, 0},
		// Etsy ignores every field after its rate (fields[3] on), so a
		// second rate, or a "T" that is no timestamp, after a valid
		// rate is ignored: the first rate is the line's. Before a rate,
		// or after another DogStatsD field, a "T" field must be a
		// timestamp; a bad first rate stays a bad line.
		{"a:1|c|@0.5|@0.25", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|@0.25:2|c|@0.1", "a counter 1 @0.5 ; a counter 2 @0.1", 0, 0},
		{"a:1|c|@0.5|@x", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|@", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|@1e-310", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|T123", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|T17x", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|T", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|T17x|x:2|ms", "a counter 1 @0.5 ; a timer 2", 0, 0},
		{"a:1|c|#t|@0.5|@0.25|T1x", "a;t counter 1 @0.5", 0, 0},
		{"a:1|c|@x|@0.5", "", 1, ReasonBadRate},
		{"a:1|c|T17x|@0.5", "", 1, ReasonBadField},
		{"a:1|c|#t|T17x", "", 1, ReasonBadField},
		{"a:1|c|#t|T", "", 1, ReasonBadField},
		// Unless what follows the key's ':' is Etsy's next segment, a
		// value and a metric type: Etsy reads a timer 2 there after the
		// counter (it ignores "x" after its rate), or after a bad line,
		// and the rate that follows is the timer's, not the counter's.
		{"a:1|c|@0.5|x:2|ms", "a counter 1 @0.5 ; a timer 2", 0, 0},
		{"a:1|c|@0.5|card:2| ms|@0.25", "a counter 1 @0.5 ; a timer 2 @0.25", 0, 0},
		{"a:1|c|x:5|ms|@0.1", "a timer 5 @0.1", 1, ReasonBadField},
		{"a:1|ms|s:2|c", "a counter 2", 1, ReasonBadField},
		{"a:1|c|@0.5|x:abc|ms", "a counter 1 @0.5", 1, ReasonBadValue},
		// So too when that type ends at Etsy's ':' and a chain of
		// such segments follows, ending in a type that is a whole
		// field: Etsy reads a timer 2 and a gauge 3 there.
		{"a:1|c|@0.5|x:2|ms:3|g", "a counter 1 @0.5 ; a timer 2 ; a gauge 3", 0, 0},
		{"a:1|c|@0.5|x:2|ms:3|g|@0.5:4|s", `a counter 1 @0.5 ; a timer 2 ; a gauge 3 @0.5 ; a set "4"`, 0, 0},
		{"a:1|c|@0.5|x:2|ms:3|c:4|s", `a counter 1 @0.5 ; a timer 2 ; a counter 3 ; a set "4"`, 0, 0},
		{"a:1|c|@0.5|x:2| ms:3|g", "a counter 1 @0.5 ; a timer 2 ; a gauge 3", 0, 0},
		{"a:1|c|x:5|ms:6|c|@0.1", "a timer 5 ; a counter 6 @0.1", 1, ReasonBadField},
		// After the tags field no chain is Etsy's: its values end at
		// the first "|#" ("t|x:2|ms:3|g" is its tags, a key
		// "a;tx=2ms3g"), and the agent ignores the fields.
		{"a:1|c|#t|x:2|ms:3|g", "a;t counter 1", 0, 0},
		{"a:1|c|#t|-3:2.5|c", "a;t counter 1", 0, 0},
		{"a:1|c:|#t|2:3|ms", "a;t counter 1", 1, ReasonNoType},
		{"a:1|c|#t|@0.5:2|ms", "", 1, ReasonBadRate},
		{"a:1|c|#t|x:2|", "a;t counter 1", 0, 0},
		// A chain that ends otherwise is DogStatsD's key fields (Etsy:
		// a timer 2, a counter 3 and a bad line "ci-1").
		{"a:1|c|@0.5|x:2|ms:3|c:ci-1", "a counter 1 @0.5", 0, 0},
		// A chain whose last type ends at a ':' that ends the line (or
		// is followed only by more ':') is Etsy's too: its segments,
		// then an empty piece for each ':' after the type, a bad line
		// each, as Etsy reads them; no DogStatsD field follows there.
		{"a:1|c|@0.5|x:2|ms:", "a counter 1 @0.5 ; a timer 2", 1, ReasonNoType},
		{"a:1|c|@0.5|x:2|ms::", "a counter 1 @0.5 ; a timer 2", 2, ReasonNoType},
		{"a:1|c|@0.5|x:2| ms:", "a counter 1 @0.5 ; a timer 2", 1, ReasonNoType},
		{"a:1|c|@0.5|x:2|ms:3|g:", "a counter 1 @0.5 ; a timer 2 ; a gauge 3", 1, ReasonNoType},
		{"a:1|c|x:5|ms:", "a timer 5", 2, ReasonBadField},
		{"a:1|c|@0.5|x:2|ms:3|c:ci-1:", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|x:2|ms:|#t", "a;t counter 1 @0.5 ; a;t timer 2", 1, ReasonNoType},
		{"a:1|c|@0.5|x:2|ms:|card:low", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@0.5|x:", "a counter 1 @0.5", 0, 0},
		// A DogStatsD field after a key field is no metric type, even
		// one that starts with a type's letter ("c:" the container id).
		{"a:1|c|@0.5|e:it-false|c:ci-1|card:low", "a counter 1 @0.5", 0, 0},
		{"a:1|c|#t|card:low|c:in-5", "a;t counter 1", 0, 0},
		{"a:1|c|newkey:5|c:ci-1|s:x", "a counter 1", 0, 0},
		// Etsy key sanitizing.
		{"a b\t\tc/d:1|c", "a_b_c-d counter 1", 0, 0},
		{"a!@b#c$:1|c", "abc counter 1", 0, 0},
		{"x\u00a0\u3000y\u00e9:1|c", "x_y counter 1", 0, 0},
		{"k;t=v:1|c", "k;t=v counter 1", 0, 0},
		// White space around the type or after the rate: Etsy trims the
		// type (stats.js fields[1].trim()), but checks the value against
		// the untrimmed one (helpers.js is_valid_packet: as a counter's,
		// so "-1|ms " is a timer and "abc|s " a bad line), and its rate
		// check is Number(), which ignores trailing white space.
		{"t:1|ms ", "t timer 1", 0, 0},
		{"c:2|c\t", "c counter 2", 0, 0},
		{"g:3|g ", "g gauge 3", 0, 0},
		{"g:+3| g", "g gauge 3 delta", 0, 0},
		{"a:1| c\u00a0", "a counter 1", 0, 0},
		{"r:1|c|@0.5 ", "r counter 1 @0.5", 0, 0},
		{"r:1|c |@0.5\t", "r counter 1 @0.5", 0, 0},
		{"t:-1|ms ", "t timer -1", 0, 0},
		{"u:5|s ", `u set "5"`, 0, 0},
		{"u:abc|s ", "", 1, ReasonBadValue},
		// A value of white space only is 0 to Etsy (Number(" ")), which
		// its check lets through (helpers.js isNumber: a non-empty
		// string that is not NaN).
		{"ws.c: |c", "ws.c counter 0", 0, 0},
		{"ws.g:\t|g", "ws.g gauge 0", 0, 0},
		{"ws.t:  |ms", "ws.t timer 0", 0, 0},
		{"ws.s: |s ", `ws.s set " "`, 0, 0},
		{"u:|s ", "", 1, ReasonBadValue},
		// A rate in exponent form is the number it writes, as
		// statsd_exporter and the Datadog agent read it (Go's
		// ParseFloat) and as clients that format with %g send small
		// rates; Etsy reads the digits before the 'e' (1, 5, 0.5).
		{"a:1|c|@1e-1", "a counter 1 @0.1", 0, 0},
		{"a:1|c|@5E-1", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@.5e+0", "a counter 1 @0.5", 0, 0},
		{"a:1|c|@1e-05", "a counter 1 @1e-05", 0, 0},
		{"t:3|ms|@2.5e-1 ", "t timer 3 @0.25", 0, 0},
		{"a:1|c|@1e", "", 1, ReasonBadRate},
		{"a:1|c|@1e-", "", 1, ReasonBadRate},
		{"a:1|c|@e-1", "", 1, ReasonBadRate},
		{"a:1|c|@.e-1", "", 1, ReasonBadRate},
		{"a:1|c|@1e-1.5", "", 1, ReasonBadRate},
		{"a:1|c|@1e-1e2", "", 1, ReasonBadRate},
		{"a:1|c|@1e--1", "", 1, ReasonBadRate},
		{"a:1|c|@1e400", "", 1, ReasonBadRate},
		{"a:1|c|@1e-400", "", 1, ReasonBadRate},
		{"a:1|c|@-1e-1", "", 1, ReasonBadRate},
		{"a:1|c|@ 0.5", "", 1, ReasonBadRate},
		// A rate so small that 1/rate is not finite (a denormal, as an
		// exponent or as 310 decimal digits) would make the counter, or
		// the timer's count, infinite: a bad line, as is a counter value
		// that 1/rate takes past ±MaxFloat64 (Etsy: Infinity).
		{"a:1|c|@1e-310", "", 1, ReasonRateTooSmall},
		{"t:1|ms|@4.9e-324", "", 1, ReasonRateTooSmall},
		{"g:1|g|@1e-309", "", 1, ReasonRateTooSmall},
		{"a:1|c|@0." + strings.Repeat("0", 308) + "1", "", 1, ReasonRateTooSmall},
		{"a:1|c|@1e-308", "a counter 1 @1e-308", 0, 0},
		{"a:1e308|c|@0.1", "", 1, ReasonCounterOverflow},
		{"a:-1e308|c|@0.5:1e308|c|@0.5:2|c|@0.5", "a counter 2 @0.5", 2, ReasonCounterOverflow},
		{"t:1e308|ms|@0.1", "t timer 1e+308 @0.1", 0, 0},
		{"a:1.79e308|c|@0.99", "", 1, ReasonCounterOverflow},
		{"a:1.7e308|c|@0.99999", "a counter 1.7e+308 @0.99999", 0, 0},
		{"a:1|c|@0.5 x", "", 1, ReasonBadRate},
		// Bad lines, counted per value as Etsy's bad_lines_seen.
		{"a", "", 1, ReasonNoColon},
		// A tags field before the name's ':' leaves no ':' to Etsy,
		// which takes "|#" and what follows off the line first: one bad
		// line (to the Datadog agent too), not a key "at".
		{"a|#t:1|ms", "", 1, ReasonNoColon},
		{"a|#:1|c", "", 1, ReasonNoColon},
		{"a|#t:1|c|#k:v", "", 1, ReasonNoColon},
		{"a|b:1|c", "ab counter 1", 0, 0},
		{"a:1", "", 1, ReasonNoType},
		{"a:1|x", "", 1, ReasonUnknownType},
		{"a:x|c", "", 1, ReasonBadValue},
		{"a:|c", "", 1, ReasonBadValue},
		{"a:0x10|c", "", 1, ReasonBadValue},
		{"a:Infinity|c", "", 1, ReasonBadValue},
		{"a:NaN|g", "", 1, ReasonBadValue},
		{"a:1e999|c", "", 1, ReasonBadValue},
		{"a:-1|ms", "", 1, ReasonNegativeTimer},
		{"a:1|c|@", "", 1, ReasonBadField},
		{"a:1|c|@0", "", 1, ReasonBadRate},
		{"a:1|c|@-1", "", 1, ReasonBadRate},
		{"a:1|c|@1.2.3", "", 1, ReasonBadRate},
		{"a:1|c|", "", 1, ReasonBadField},
		{"a:1|c|x", "", 1, ReasonBadField},
		// A second tags field is ignored: Etsy's key has the tags of
		// the first "|#" up to the next "|#" ("a;a" here).
		{"a:1|c|#a|#b", "a;a counter 1", 0, 0},
		{"a:1|c|@0.5|#t|#u,v", "a;t counter 1 @0.5", 0, 0},
		{"a:1|c|1:x", "", 2, ReasonBadField},
		{":1|c", "", 1, ReasonEmptyName},
		{"!!:1|c", "", 1, ReasonEmptyName},
		{"%%:1|c", "", 1, ReasonEmptyName}, // Etsy: a counter with the empty key
		{"a:1|c:x|c", "a counter 1", 1, ReasonBadValue},
		// Etsy splits on ':' and counts each empty piece as a bad line,
		// one left by a ':' ending the line too.
		{"a:1|c:", "a counter 1", 1, ReasonNoType},
		{"a:1|c::", "a counter 1", 2, ReasonNoType},
		{"a:1|c|@0.5:", "a counter 1 @0.5", 1, ReasonNoType},
		// A piece with no type before the tags field is a bad line, and
		// the tags are still the line's: Etsy takes them off first.
		{"a:1|c:|#t", "a;t counter 1", 1, ReasonNoType},
		{"a:1|c:2|#env:prod", "a;env=prod counter 1", 1, ReasonNoType},
		{"a:1|c::|#t|@0.5", "a;t counter 1", 2, ReasonNoType},
		{"a:|#t", "", 1, ReasonNoType},
		{"a:", "", 1, ReasonNoType},
		{"a:1|c|#k:", "a counter 1", 0, 0},
		{"a:1:x:3|c", "a counter 1 ; a counter 3", 1, ReasonBadValue},
		{"a:1|q:2|c", "a counter 2", 1, ReasonUnknownType},
		{"_bl.seq:c1/9|seq", "c1 sequence 9", 0, 0},
		{"_bl.seq:c1/x|seq", "", 1, ReasonBadSeq},
		{strings.Repeat("k", MaxKeyLen+1) + ":1|c", "", 1, ReasonKeyTooLong},
		{"a:1|c|#" + strings.Repeat("t,", MaxTags+1), "", 1, ReasonBadTags},
	} {
		var p Parser
		ms, bad, why := p.AppendLine(nil, []byte(tc.line))
		if got := parsed(ms); got != tc.want || bad != tc.bad || why != tc.why {
			t.Errorf("%q:\n got %s, bad %d (%v)\nwant %s, bad %d (%v)", tc.line, got, bad, why, tc.want, tc.bad, tc.why)
		}
	}
}

// TestParseManyKeyFields: a line of key fields each followed by most
// of an Etsy segment chain ("|k:1|c:1|c:...:zz") is walked once, not
// once per field: 16,000 fields took 2 s when each walked the chain
// again, and take under a millisecond.
func TestParseManyKeyFields(t *testing.T) {
	line := []byte("a:1|c|k:" + strings.Repeat("1|c:", 16000) + "zz")
	var p Parser
	start := time.Now()
	ms, bad, why := p.AppendLine(nil, line)
	if d := time.Since(start); d > time.Second {
		t.Errorf("%d bytes of key fields took %v", len(line), d)
	}
	if got := parsed(ms); got != "a counter 1" || bad != 0 {
		t.Errorf("got %s, bad %d (%v); want a counter 1", got, bad, why)
	}
}

func TestParseNoSanitize(t *testing.T) {
	p := Parser{NoSanitize: true}
	ms, _, _ := p.AppendLine(nil, []byte("a b/c:1|c|#k:v"))
	if got := parsed(ms); got != "a b/c;k=v counter 1" {
		t.Errorf("got %s", got)
	}
}

// The keys of earlier lines stay intact while later lines are parsed
// into the same arena.
func TestParseKeysSurviveArenaGrowth(t *testing.T) {
	var p Parser
	var ms []Metric
	for i := range 1000 {
		ms, _, _ = p.AppendLine(ms, fmt.Appendf(nil, "key%d:%d|c|#z:%d,a", i, i, i))
	}
	for i, m := range ms {
		if want := fmt.Sprintf("key%d;a;z=%d", i, i); string(m.Key) != want || m.Value != float64(i) {
			t.Fatalf("metric %d: %s %v, want %s", i, m.Key, m.Value, want)
		}
	}
}

func TestParseNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"-0", math.Copysign(0, -1), true}, {"+5", 5, true}, {"5.", 5, true},
		{".5", 0.5, true}, {"1.1", 1.1, true}, {"123456789012345678", 123456789012345678, true},
		{"1e-7", 1e-7, true}, {" 3\t", 3, true}, {"", 0, false}, {" ", 0, true}, {"\t \r", 0, true}, {".", 0, false}, {"1e", 0, false},
		{"inf", 0, false}, {"-Infinity", 0, false}, {"0x1p3", 0, false}, {"1_0", 0, false}, {"--1", 0, false},
	} {
		got, ok := parseNumber([]byte(tc.in))
		if ok != tc.ok || ok && (got != tc.want || math.Signbit(got) != math.Signbit(tc.want)) {
			t.Errorf("parseNumber(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseLineAllocs(t *testing.T) {
	var p Parser
	ms := make([]Metric, 0, 16)
	lines := [][]byte{
		[]byte("api.requests:1|c|@0.5"),
		[]byte("api.latency:12.5|ms|#env:prod,region:eu"),
		[]byte("api.users:alice|s"),
		[]byte("api.temp:-3|g"),
		[]byte("api.sizes:1:2:3|d"),
		[]byte("api.hits:1|c|@1e-1|#env:prod|c:ci-9|card:low|x:y|T1700000000"),
		[]byte(`_e{6,11}:deploy|v2|ok\ndone|p:low|#env:prod`),
		[]byte("_sc|api.up|2|#env:prod|m:down"),
		[]byte("_e{6,99}:deploy|v2"),
	}
	for _, l := range lines { // warm the arena
		ms, _, _ = p.AppendLine(ms, l)
	}
	n := testing.AllocsPerRun(1000, func() {
		p.Reset()
		ms = ms[:0]
		for _, l := range lines {
			ms, _, _ = p.AppendLine(ms, l)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

func isJSSpace(r rune) bool { return r < utf8.RuneSelf && asciiSpace[r] || jsSpace(r) }

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"a:1|c", "a:1|c|@0.1", "g:+4|g", "t:1:2|ms|#a:b,c", "u:x|s", "a:1|c:2|ms",
		"a:1|c|c:abc|T1700000000", "_bl.seq:c/1|seq", "a b/\u00a0c:1|c", "a:1|c|#k:v;w|@0.5:3|g", "t:-1|ms ", "a:1|c|@1e-310", "a:1e308|c|@0.1",
		`_e{5,11}:title|te|xt\nmore|d:1700000000|h:host|p:low|t:warning|#env:prod`, "_e{5,40}:title|text", "_e{1,0}:t|",
		"_sc|my.check|2|d:1700000000|h:host|#env:prod|m:disk: full", "_sc|my.check|7", "_scale:1|c"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var p Parser
		ms, bad, why := p.AppendLine(nil, line)
		if bad < 0 || (bad > 0) != (why != ReasonNone) {
			t.Fatalf("%q: bad %d, why %v", line, bad, why)
		}
		if (IsEvent(line) || IsServiceCheck(line)) && len(ms) > 0 {
			t.Fatalf("%q: an event or service check gave metrics %s", line, parsed(ms))
		}
		for _, m := range ms {
			if m.Type == Sequence {
				continue
			}
			if len(m.Key) == 0 || len(m.Key) > MaxKeyLen {
				t.Fatalf("%q: key %q", line, m.Key)
			}
			for _, c := range m.Key {
				if c >= 0x80 || !keyByte[c] {
					t.Fatalf("%q: unsanitized key %q", line, m.Key)
				}
			}
			if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || !(m.Rate > 0) || math.IsInf(m.Rate, 0) || math.IsInf(1/m.Rate, 0) {
				t.Fatalf("%q: value %v rate %v", line, m.Value, m.Rate)
			}
			// What the aggregator adds for a counter (Aggregator.Add).
			if m.Type == Counter && math.IsInf(m.Value*(1/m.Rate), 0) {
				t.Fatalf("%q: counter %v at rate %v adds %v", line, m.Value, m.Rate, m.Value*(1/m.Rate))
			}
			// A negative timer value needs a type padded with white
			// space, which Etsy checks as a counter's ("t:-1|ms ").
			if m.Type == Timer && m.Value < 0 && bytes.IndexFunc(line, isJSSpace) < 0 {
				t.Fatalf("%q: negative timer", line)
			}
		}
	})
}
