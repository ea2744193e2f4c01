package statsd

import "bytes"

// Limits of the parser: a line beyond one is a bad line. Client refuses
// a metric beyond them at the call, so that it never sends one.
const (
	// MaxKeyLen bounds a key: name and tags after sanitizing.
	MaxKeyLen = 1024
	// MaxTags bounds the tags of one line.
	MaxTags = 64
)

// Parser reads StatsD lines into Metrics without allocating once warm.
// Keys are built in an arena that Reset empties; a Parser is not safe
// for concurrent use.
type Parser struct {
	// NoSanitize keeps names and tags as written (Etsy's
	// keyNameSanitize: false).
	NoSanitize bool

	arena []byte
	tags  [MaxTags][]byte
}

// Reset forgets the keys of the Metrics returned so far, so their
// memory is reused.
func (p *Parser) Reset() { p.arena = p.arena[:0] }

// AppendLine parses one line (without its newline; a trailing '\r' is
// ignored) and appends its metrics to dst. A line holds one metric per
// value: several with Etsy's "a:1|c:2|ms" or DogStatsD's packed
// "a:1:2:3|ms". bad counts the values rejected, as Etsy's bad_lines_seen
// does, and why says why the first was; the good values of a line with
// bad ones are still returned. A DogStatsD event or service check
// (IsEvent, IsServiceCheck) gives no metric, and is one bad line when
// malformed.
func (p *Parser) AppendLine(dst []Metric, line []byte) (out []Metric, bad int, why Reason) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > 0 && line[0] == '_' {
		switch {
		case IsSeqLine(line):
			id, seq, ok := ParseSeqLine(line)
			if !ok {
				return dst, 1, ReasonBadSeq
			}
			return append(dst, Metric{Key: id, Type: Sequence, Seq: seq, Rate: 1}), 0, ReasonNone
		case IsEvent(line):
			if !wellFormedEvent(line) {
				return dst, 1, ReasonBadEvent
			}
			return dst, 0, ReasonNone
		case IsServiceCheck(line):
			if !wellFormedServiceCheck(line) {
				return dst, 1, ReasonBadServiceCheck
			}
			return dst, 0, ReasonNone
		}
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 || bytes.IndexByte(line[:colon], '|') >= 0 && bytes.Contains(line[:colon], tagsMark) {
		// Etsy 0.9.0 reads the whole line as the key with the value
		// "1" and no type: one bad line. So it does a line whose
		// first "|#" comes before any ':' ("a|#t:1|c"): it takes the
		// tags field off first, which leaves no ':'.
		return dst, 1, ReasonNoColon
	}
	first := len(dst)
	var (
		s       = scanner{b: line, i: colon + 1, more: true}
		seg     segment
		tags    []byte
		hasTags bool
	)
	for s.more {
		s.next(&seg, &tags, &hasTags)
		if seg.why != ReasonNone {
			if why == ReasonNone {
				why = seg.why
			}
			bad += seg.count()
			continue
		}
		var sbad int
		var swhy Reason
		dst, sbad, swhy = seg.appendValues(dst)
		if why == ReasonNone {
			why = swhy
		}
		bad += sbad
	}
	if len(dst) == first {
		return dst, bad, why
	}
	key, kwhy := p.key(line[:colon], tags)
	if kwhy != ReasonNone {
		// Every value of the line is lost with its key.
		return dst[:first], bad + len(dst) - first, kwhy
	}
	for i := first; i < len(dst); i++ {
		dst[i].Key = key
	}
	return dst, bad, why
}

// tagsMark starts a DogStatsD tags field.
var tagsMark = []byte("|#")

// key builds the key of a line from its name and tags field.
func (p *Parser) key(name, tagField []byte) ([]byte, Reason) {
	start := len(p.arena)
	p.arena = p.sanitize(p.arena, name)
	if len(p.arena) == start {
		return nil, ReasonEmptyName
	}
	n := 0
	for len(tagField) > 0 {
		var tag []byte
		if i := bytes.IndexByte(tagField, ','); i >= 0 {
			tag, tagField = tagField[:i], tagField[i+1:]
		} else {
			tag, tagField = tagField, nil
		}
		if len(tag) == 0 {
			continue
		}
		if n == MaxTags {
			p.arena = p.arena[:start]
			return nil, ReasonBadTags
		}
		p.tags[n] = tag
		n++
	}
	// Tags go in sorted and without repeats, so that the same tags in
	// another order are the same key. Sanitize each into the arena
	// first, then sort the sanitized forms.
	tagStart := len(p.arena)
	for i := 0; i < n; i++ {
		at := len(p.arena)
		p.arena = p.appendTag(p.arena, p.tags[i])
		p.tags[i] = p.arena[at:len(p.arena):len(p.arena)]
		// A tag with an empty name or value ("env:", ":x") is no tag:
		// Prometheus has no empty label and carbon refuses both.
		if eq := bytes.IndexByte(p.tags[i], '='); eq == 0 || eq == len(p.tags[i])-1 {
			p.tags[i] = nil
		}
	}
	sortTags(p.tags[:n])
	tagEnd := len(p.arena)
	var prev []byte
	for i := 0; i < n; i++ {
		t := p.tags[i]
		if len(t) == 0 || (i > 0 && bytes.Equal(t, prev)) {
			continue
		}
		prev = t
		p.arena = append(p.arena, ';')
		p.arena = append(p.arena, t...)
	}
	// Move the joined tags down over the sanitized copies.
	joined := len(p.arena) - tagEnd
	copy(p.arena[tagStart:], p.arena[tagEnd:])
	p.arena = p.arena[:tagStart+joined]
	if len(p.arena)-start > MaxKeyLen {
		p.arena = p.arena[:start]
		return nil, ReasonKeyTooLong
	}
	return p.arena[start:len(p.arena):len(p.arena)], ReasonNone
}

func (p *Parser) sanitize(b, s []byte) []byte {
	if p.NoSanitize {
		return append(b, s...)
	}
	return appendSanitized(b, s)
}

// appendTag appends a tag as Etsy 0.9.0 puts it in a key, its first
// ':' becoming '=', then sanitized; but every ';' becomes '_' where Etsy
// turns only the first, so that a tag never reads as two in the key and
// the key's tags stay sorted (one tag set, one key).
func (p *Parser) appendTag(b, tag []byte) []byte {
	semi, colon := bytes.IndexByte(tag, ';'), bytes.IndexByte(tag, ':')
	if semi < 0 && colon < 0 {
		return p.sanitize(b, tag)
	}
	// Rewrite in place past the end of b, then sanitize from there.
	at := len(b)
	b = append(b, tag...)
	raw := b[at:]
	if semi >= 0 {
		for i := semi; i < len(raw); i++ {
			if raw[i] == ';' {
				raw[i] = '_'
			}
		}
	}
	if colon >= 0 {
		raw[colon] = '='
	}
	if p.NoSanitize {
		return b
	}
	// Each input character yields at most one byte, written behind the
	// reading position, so sanitizing in place is safe.
	return appendSanitized(b[:at], raw)
}

// sortTags sorts a few tags in place (insertion sort: no allocation,
// and lines carry few tags).
func sortTags(t [][]byte) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && bytes.Compare(t[j], t[j-1]) < 0; j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}
