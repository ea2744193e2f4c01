package statsd

import "unicode/utf8"

// The brokerless server refuses a line whose key is longer than
// MaxKeyLen bytes, that has more than MaxTags tags, or whose name is
// empty once sanitized (Parser), counting it in statsd.bad_lines_seen.
// The client refuses such a metric at the call instead, dropped and
// counted in its Stats, so that every line it sends is one the server
// takes.

// measureTags is what tags add to the key the brokerless server builds,
// at most, and how many of them it counts against MaxTags: ';' and the
// tag for each that is not empty (the client turns a ',' in a tag into
// '_', so each is one tag on the wire). The server's key is never
// longer: sanitizing turns a character into at most one, ':' becoming
// '=' keeps the length, and a repeated tag or one with an empty name or
// value is left out. With the name's length it is the server's key
// length exactly when sanitizing leaves name and tags as they are and
// the tags are distinct, none with an empty name or value; it holds
// whether or not the server sanitizes (Config.NoSanitize).
func measureTags(tags []string) (keyBytes, n int) {
	for _, t := range tags {
		if t != "" {
			keyBytes += len(";") + len(t)
			n++
		}
	}
	return keyBytes, n
}

// keyFits reports whether the brokerless server takes the key of a
// metric: name after ClientConfig.Prefix, tags after ClientConfig.Tags.
// When it does not, the metric's lines are counted as dropped, as
// negative durations and non-finite values are.
func (c *Client) keyFits(name string, tags []string, lines int) bool {
	b, k := measureTags(tags)
	if len(c.cfg.Prefix)+len(name)+c.defaultKey+b <= MaxKeyLen && c.defaultN+k <= MaxTags &&
		c.nameTaken(name) {
		return true
	}
	c.counters.dropped.Add(uint64(lines))
	return false
}

// nameTaken reports whether the server takes name after
// ClientConfig.Prefix: any but the empty one if it keeps names as
// written (ClientConfig.NoSanitize), else one its sanitizing keeps a
// character of.
func (c *Client) nameTaken(name string) bool {
	if c.cfg.NoSanitize {
		return c.cfg.Prefix != "" || name != ""
	}
	return c.prefixKept || nameKept(name) || c.joinKept(name)
}

// A name the sanitizing server (appendSanitized) empties is one in which
// it keeps no character: none allowed in a key, no '/' (made '-') and
// no whitespace (made '_'). The client writes ':', '|' and '\n' as '_',
// which is kept. So ClientConfig.Prefix (precomputed, Client.prefixKept)
// or the name keeping one character is enough, and is found at the
// first byte of almost every name; only a name the server would empty
// is read to its end. A server with NoSanitize takes such a name (but
// the empty one): a client told so (ClientConfig.NoSanitize) sends it.

// nameKeeps marks the ASCII bytes the server keeps in a name as the
// client writes it: sanitizing keeps or replaces them (whatever their
// neighbours: an ASCII byte is never part of a longer UTF-8 sequence).
var nameKeeps = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = keyByte[c] || asciiSpace[c] || c == '/' || clientReservedInName[c]
	}
	return t
}()

// nameKept reports whether sanitizing, as the server decodes s, keeps
// a character of s: an ASCII byte of nameKeeps, or a non-ASCII
// whitespace character.
func nameKept[T string | []byte](s T) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if nameKeeps[c] {
				return true
			}
			i++
			continue
		}
		var r rune
		var n int
		switch s := any(s).(type) {
		case string:
			r, n = utf8.DecodeRuneInString(s[i:])
		case []byte:
			r, n = utf8.DecodeRune(s[i:])
		}
		if jsSpace(r) {
			return true
		}
		i += n
	}
	return false
}

// joinKept reports whether the prefix and the name, neither keeping a
// character on its own, make one together: a prefix ending in part of
// a UTF-8 sequence that the name's first bytes complete into a
// whitespace character. Every character is at most 4 bytes (whitespace
// 3), and decoding restarts at every leading byte, so the last 3 bytes
// of the prefix and the first 3 of the name decide it.
func (c *Client) joinKept(name string) bool {
	p := c.cfg.Prefix
	if p == "" || name == "" || utf8.RuneStart(name[0]) {
		return false
	}
	var w [6]byte
	n := copy(w[:], p[max(0, len(p)-3):])
	n += copy(w[n:], name[:min(3, len(name))])
	return nameKept(w[:n])
}
