package statsd

import "bytes"

// DogStatsD events and service checks are not metrics. The server has
// no backend for them: it recognises them by these prefixes, as the
// Datadog agent does, checks their form, and counts them
// (ServerStats.EventsIgnored, ServiceChecksIgnored, and as lines in
// metrics_received, as Etsy counts every line); a malformed one is a
// bad line. Neither is ever read as a metric:
//
//	_e{<title length>,<text length>}:<title>|<text>[|d:…|h:…|k:…|p:…|s:…|t:…|#tags]
//	_sc|<name>|<status>[|d:…|h:…|#tags|m:<message>]
//
// The lengths are in bytes, as sent: the title and the text may hold
// '|' and ':', and a newline is sent as the two bytes "\n".
const (
	// EventPrefix starts every DogStatsD event.
	EventPrefix = "_e{"
	// ServiceCheckPrefix starts every DogStatsD service check. (The
	// agent tests "_sc", then reads past "_sc|"; a metric named
	// "_scale" stays a metric here.)
	ServiceCheckPrefix = "_sc|"
)

// IsEvent reports whether line (without its newline) is meant as a
// DogStatsD event, well formed or not.
func IsEvent(line []byte) bool { return bytes.HasPrefix(line, []byte(EventPrefix)) }

// IsServiceCheck reports whether line (without its newline) is meant as
// a DogStatsD service check, well formed or not.
func IsServiceCheck(line []byte) bool { return bytes.HasPrefix(line, []byte(ServiceCheckPrefix)) }

// wellFormedEvent reports whether an event line (IsEvent, without its
// newline and '\r') has a header "_e{a,b}:" of two decimal lengths, the
// title's at least 1, followed by a title of a bytes, a '|', a text of
// b bytes, and the end of the line or a '|' that starts its fields.
// The agent is laxer: it takes any byte after the title as the
// separator and whatever follows the text as fields; but lengths that
// miss the '|' are lengths counted otherwise (in characters, say), and
// the title and text they cut out are not the ones sent.
func wellFormedEvent(line []byte) bool {
	b := line[len(EventPrefix):]
	title, b, ok := eventLength(b, ',', len(line))
	if !ok || title == 0 {
		return false
	}
	text, b, ok := eventLength(b, '}', len(line))
	if !ok || len(b) == 0 || b[0] != ':' {
		return false
	}
	b = b[1:]
	if title >= len(b) || b[title] != '|' {
		return false
	}
	b = b[title+1:]
	return text == len(b) || text < len(b) && b[text] == '|'
}

// eventLength reads a length of an event's header: decimal digits,
// worth at most most, then the byte end. rest follows end.
func eventLength(b []byte, end byte, most int) (n int, rest []byte, ok bool) {
	i := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
		if n > most {
			return 0, nil, false
		}
	}
	if i == 0 || i == len(b) || b[i] != end {
		return 0, nil, false
	}
	return n, b[i+1:], true
}

// wellFormedServiceCheck reports whether a service check line
// (IsServiceCheck) has a name that is not empty and a status of 0
// (OK), 1 (warning), 2 (critical) or 3 (unknown), as the agent
// requires, followed by the end of the line or a '|' that starts its
// fields.
func wellFormedServiceCheck(line []byte) bool {
	b := line[len(ServiceCheckPrefix):]
	bar := bytes.IndexByte(b, '|')
	if bar < 1 {
		return false
	}
	st := b[bar+1:]
	return len(st) > 0 && '0' <= st[0] && st[0] <= '3' && (len(st) == 1 || st[1] == '|')
}
