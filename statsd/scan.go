package statsd

import (
	"bytes"
	"math"
	"unicode/utf8"
)

// scanner walks the values of a line after the name's ':'. A segment is
// "value[:value...]|type[|field...]"; segments follow each other after a
// ':' that ends a type or a sample rate (Etsy's "a:1|c:2|ms|@0.1").
// Fields are "@rate", "#tags" (the first is the line's, as Etsy's; a
// later one is ignored), and DogStatsD's
// "T<unix-seconds>" and "key:value" fields ("c:container",
// "e:external-data", "card:cardinality", and those of later versions),
// which are skipped, unless a metric type follows the key's value
// (keyField): that is Etsy's next segment.
//
// The first field after the type must be one of these: Etsy reads it as
// the sample rate and counts anything else as a bad line. Another
// unknown field after it is ignored, as Etsy ignores what follows its
// rate and the Datadog agent any field it does not know; so is any
// field after a rate, a second rate or a "T" that is no timestamp
// included (the first rate is the segment's, as Etsy's). Before any
// rate a bad rate or a "T" without its digits stay bad lines. After the
// line's tags field a field is read whole, as the Datadog agent reads
// it: no ':' there ends a segment or starts Etsy's next one, Etsy's
// values ending at the first "|#".
type scanner struct {
	b []byte
	i int
	// more: a ':' ended the last segment (or the name), so another
	// follows, even an empty one at the end of the line: Etsy splits on
	// ':' and counts an empty piece as a bad line.
	more bool
	// The last chain etsySegment walked: link starts chainFrom up to
	// chainTo (the link that decided), and its answer. Any later walk
	// that starts in that range starts at one of its links (see
	// etsySegment) and has the same answer, so a line of many key
	// fields is walked once, not once per field.
	chainFrom, chainTo int
	chainOK            bool
}

// segment is one parsed segment: its values and what applies to them.
type segment struct {
	values []byte
	typ    Type
	rate   float64
	why    Reason
	// padded: the type had white space around it, so its values are
	// checked as a counter's (see next).
	padded bool
}

// next scans the next segment into seg, and a tags field it holds into
// tags. (Filled in place: a segment returned by value was copied back
// through memory just written field by field, a store-forwarding stall
// that took a tenth of BenchmarkAggregatePacket's profile.)
func (s *scanner) next(seg *segment, tags *[]byte, hasTags *bool) {
	*seg = segment{}
	s.more = false
	start := s.i
	bar := bytes.IndexByte(s.b[start:], '|')
	if bar < 0 {
		seg.values, seg.why, s.i = s.b[start:], ReasonNoType, len(s.b)
		return
	}
	seg.values = s.b[start : start+bar]
	s.i = start + bar + 1
	seg.rate = 1
	end := false
	if s.i < len(s.b) && s.b[s.i] == '#' {
		// "value|#tags": no type, a bad line; the tags field is still
		// the line's (read below), as Etsy takes "|#" and what follows
		// off the line before it splits it ("a:1|c:|#t" is a counter
		// under "a;t" and a bad line to it).
		seg.why = ReasonNoType
	} else {
		var typ []byte
		typ, end = s.token()
		seg.typ = parseType(typ)
		if seg.typ == 0 {
			// Etsy trims the type (stats.js fields[1].trim()), but
			// checks the values against the untrimmed one first
			// (helpers.js is_valid_packet), which matches none of
			// "s", "g", "ms": they are checked as a counter's.
			if t := trimJSSpace(typ); len(t) < len(typ) {
				seg.typ, seg.padded = parseType(t), true
			}
		}
		if seg.typ == 0 {
			seg.why = ReasonUnknownType
		}
	}
	rateSeen := false
	for first := true; !end; first = false {
		// s.b[s.i-1] == '|': a field starts at s.i.
		f := s.b[s.i:]
		switch {
		case len(f) > 0 && f[0] == '#':
			v := s.field()
			if !*hasTags {
				// The first tags field is the line's; a later one
				// is ignored, as Etsy's key has the tags of the
				// first "|#" only.
				*tags, *hasTags = v[1:], true
			}
			end = s.lastField(f)
			continue
		case !*hasTags && s.keyField(f):
			s.field()
			end = s.lastField(f)
			continue
		}
		var tok []byte
		if *hasTags {
			// After the line's tags field a ':' neither ends the
			// segment nor starts Etsy's next one: Etsy's values end
			// at the first "|#" (what follows is its tags and key),
			// and the field is DogStatsD's, read whole as the
			// agent reads it ("a:1|c|#t|x:2|ms" is a counter 1, not
			// a timer 2 too).
			tok = s.field()
			end = s.lastField(f)
		} else {
			tok, end = s.token()
		}
		switch {
		case len(tok) > 1 && tok[0] == '@' && !rateSeen:
			rateSeen = true
			r, ok := parseRate(tok[1:])
			switch {
			case !ok:
				seg.bad(ReasonBadRate)
			case math.IsInf(1/r, 0):
				// A denormal ("@1e-310", or 310 decimal digits):
				// every value would count as infinitely many.
				seg.bad(ReasonRateTooSmall)
			}
			seg.rate = r
		case len(tok) > 1 && tok[0] == 'T' && allDigits(tok[1:]):
		case rateSeen:
			// After the rate, a second one or a "T" that is no
			// timestamp: ignored, as Etsy ignores what follows its
			// rate; the first rate is the segment's.
		case !first && (len(tok) == 0 || tok[0] != '@' && tok[0] != 'T'):
			// An unknown field after another: ignored.
		default:
			seg.bad(ReasonBadField)
		}
	}
}

// keyField reports whether f, the rest of the line from s.i, starts
// with a DogStatsD "key:value" field: a key of ASCII letters and a ':',
// unless what follows the ':' reads as Etsy's next segments
// (etsySegment): in "a:1|c|@0.5|x:2|ms:3|g" Etsy ignores "x" after its
// rate, then reads a timer 2 and a gauge 3, and in "a:1|c|x:5|ms|@0.1"
// a bad line, then a timer 5 whose rate is 0.1; skipping "x:..." to the
// next '|' would drop the timer or give its rate to the counter.
func (s *scanner) keyField(f []byte) bool {
	i := 0
	for i < len(f) && (f[i]|0x20 >= 'a' && f[i]|0x20 <= 'z') {
		i++
	}
	return i > 0 && i < len(f) && f[i] == ':' && !s.etsySegment(s.i+i+1)
}

// etsySegment reports whether the line from at starts a chain of Etsy
// segments "value|type:value|type:...value|type", each value holding no
// ':' and each type a metric type (maybe with white space about it, as
// next reads it), every type but the last ending at Etsy's ':' and the
// last being a whole field, up to the next '|' or the end, or ending at
// a ':' that nothing but ':' follows up to the end or the tags field
// ("|x:2|ms:" at the end of the line: a timer 2, then Etsy's empty
// piece, a bad line). No DogStatsD
// field is a bare metric type, so a key field followed by such a chain
// is Etsy's; "|c:ci-1", DogStatsD's container id, is a type ending at
// ':' but no chain follows it ("a:1|c|@0.5|e:x|c:ci-1|card:low"), and
// neither does one after "|x:2|ms:3|c:ci-1", read as key fields too.
//
// In a chain a '|' comes only before a type, and a type holds no ':',
// so a key field that starts within it is a type and its value the next
// link: a later call at a link of the chain last walked has its answer.
func (s *scanner) etsySegment(at int) bool {
	if s.chainTo > 0 && s.chainFrom <= at && at <= s.chainTo {
		return s.chainOK
	}
	from, ok := at, false
	for {
		b := s.b[at:]
		bar := bytes.IndexByte(b, '|')
		if bar < 0 || bytes.IndexByte(b[:bar], ':') >= 0 {
			break
		}
		t := b[bar+1:]
		j := bytes.IndexAny(t, "|:")
		if j < 0 || t[j] == '|' {
			if j >= 0 {
				t = t[:j]
			}
			ok = isType(t)
			break
		}
		if !isType(t[:j]) {
			break
		}
		if etsyLineEnd(t[j+1:]) {
			// The type's ':' ends the line, or more ':' only do (up
			// to the end or the tags): Etsy's empty pieces, bad
			// lines, where no DogStatsD field follows. This link
			// decides.
			ok = true
			break
		}
		at += bar + 1 + j + 1
	}
	s.chainFrom, s.chainTo, s.chainOK = from, at, ok
	return ok
}

// etsyLineEnd reports whether b holds nothing but ':' up to the end of
// the line or a tags field ("|#"), where Etsy's line ends: it takes the
// tags off first.
func etsyLineEnd(b []byte) bool {
	for i, c := range b {
		if c != ':' {
			return c == '|' && i+1 < len(b) && b[i+1] == '#'
		}
	}
	return true
}

// isType reports whether t is a metric type, maybe with white space
// about it.
func isType(t []byte) bool { return parseType(t) != 0 || parseType(trimJSSpace(t)) != 0 }

// bad records the first reason the segment is bad.
func (seg *segment) bad(why Reason) {
	if seg.why == ReasonNone {
		seg.why = why
	}
}

// token reads up to the next '|' or ':' and steps over it; end reports
// that the segment ended (a ':' or the end of the line) rather than a
// '|' that starts another field.
func (s *scanner) token() (tok []byte, end bool) {
	start := s.i
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '|':
			s.i = j + 1
			return s.b[start:j], j+1 > len(s.b)
		case ':':
			s.i = j + 1
			s.more = true
			return s.b[start:j], true
		}
	}
	s.i = len(s.b)
	return s.b[start:], true
}

// lastField reports, after field read f (the line from where it
// started), that no field follows: the line ended with it, and not
// with a '|' (an empty field follows that), or f was that empty field.
func (s *scanner) lastField(f []byte) bool {
	return s.i >= len(s.b) && (len(f) == 0 || s.b[len(s.b)-1] != '|')
}

// field reads a field that may hold ':' (tags, container id) up to the
// next '|' and steps over it.
func (s *scanner) field() []byte {
	start := s.i
	if bar := bytes.IndexByte(s.b[start:], '|'); bar >= 0 {
		s.i = start + bar + 1
		return s.b[start : start+bar]
	}
	s.i = len(s.b)
	return s.b[start:]
}

func parseType(b []byte) Type {
	switch string(b) {
	case "c":
		return Counter
	case "g":
		return Gauge
	case "ms":
		return Timer
	case "s":
		return Set
	case "h":
		return Histogram
	case "d":
		return Distribution
	}
	return 0
}

// parseRate reads a sample rate after its '@': a positive decimal
// without sign, maybe with an exponent ("1e-05", as clients that format
// with %g send small rates), then maybe white space (Etsy checks the
// rate with Number(), which ignores it). An exponent is read as the
// number it writes, as statsd_exporter and the Datadog agent read it;
// Etsy takes the digits before the 'e' ("@1e-1" is 1 to it).
func parseRate(b []byte) (float64, bool) {
	b = trimJSSpaceRight(b)
	mantissa := b // the exponent after it is parseNumber's to check
	if e := bytes.IndexAny(b, "eE"); e >= 0 {
		mantissa = b[:e]
	}
	digits, dots := 0, 0
	for _, c := range mantissa {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	r, ok := parseNumber(b)
	return r, ok && r > 0
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// appendValues validates the values of a good segment and appends one
// Metric each; it returns how many were bad and why the first was.
func (seg *segment) appendValues(dst []Metric) (out []Metric, bad int, why Reason) {
	v := seg.values
	for {
		var one []byte
		if i := bytes.IndexByte(v, ':'); i >= 0 {
			one, v = v[:i], v[i+1:]
		} else {
			one, v = v, nil
		}
		m := Metric{Type: seg.typ, Rate: seg.rate}
		r := m.setValue(one, seg.padded)
		if r == ReasonNone {
			dst = append(dst, m)
		} else {
			if why == ReasonNone {
				why = r
			}
			bad++
		}
		if v == nil {
			return dst, bad, why
		}
	}
}

// setValue reads one value into m, checked as Etsy's is_valid_packet
// does for its type, or for a counter's when the type was padded with
// white space (any number, for a set too, and a negative timer value).
func (m *Metric) setValue(v []byte, padded bool) Reason {
	if m.Type == Set && !padded {
		if len(v) == 0 {
			v = zeroMember
		}
		m.Member = v
		return ReasonNone
	}
	f, ok := parseNumber(v)
	if !ok {
		return ReasonBadValue
	}
	if m.Type == Set {
		m.Member = v
		return ReasonNone
	}
	if m.Type == Timer && f < 0 && !padded {
		return ReasonNegativeTimer
	}
	if m.Type == Counter && m.Rate < 1 && math.IsInf(f*(1/m.Rate), 0) {
		// What Aggregator.Add would add: past ±MaxFloat64 (Etsy
		// adds Infinity). (f is finite: at a rate of 1 or more, so is
		// what is added.)
		return ReasonCounterOverflow
	}
	m.Value = f
	m.Delta = m.Type == Gauge && len(v) > 0 && (v[0] == '+' || v[0] == '-')
	return ReasonNone
}

// zeroMember is the member of an empty set value, as Etsy inserts
// fields[0] || '0'.
var zeroMember = []byte("0")

// count is how many values the segment holds.
func (seg *segment) count() int { return bytes.Count(seg.values, []byte{':'}) + 1 }

// trimJSSpace trims JavaScript's white space (String.prototype.trim)
// from both ends of b.
func trimJSSpace(b []byte) []byte {
	for {
		n := spaceLen(b)
		if n == 0 {
			return trimJSSpaceRight(b)
		}
		b = b[n:]
	}
}

// trimJSSpaceRight trims JavaScript's white space from the end of b.
func trimJSSpaceRight(b []byte) []byte {
	for len(b) > 0 {
		if c := b[len(b)-1]; c < utf8.RuneSelf {
			if !asciiSpace[c] {
				return b
			}
			b = b[:len(b)-1]
			continue
		}
		r, n := utf8.DecodeLastRune(b)
		if !jsSpace(r) {
			return b
		}
		b = b[:len(b)-n]
	}
	return b
}
