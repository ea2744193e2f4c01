package statsd

import "unicode/utf8"

// appendSanitized appends key to b the way Etsy statsd 0.9.0's
// sanitizeKeyName rewrites it (stats.js):
//
//	key.replace(/\s+/g, '_').replace(/\//g, '-').replace(/[^a-zA-Z_\-0-9\.;=]/g, '')
//
// JavaScript's \s is matched on the UTF-8 decoded text (invalid bytes
// decode to U+FFFD, which is dropped like any other character outside
// the allowed set).
//
// A run of bytes kept as they are (the whole of most keys) is appended
// in one copy.
func appendSanitized(b, key []byte) []byte {
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if keyByte[c] {
				j := i + 1
				for j < len(key) && key[j] < utf8.RuneSelf && keyByte[key[j]] {
					j++
				}
				b = append(b, key[i:j]...)
				i = j
				continue
			}
			i++
			switch {
			case c == '/':
				b = append(b, '-')
			case asciiSpace[c]:
				b = append(b, '_')
				for i < len(key) {
					n := spaceLen(key[i:])
					if n == 0 {
						break
					}
					i += n
				}
			}
			continue
		}
		if n := spaceLen(key[i:]); n > 0 {
			b = append(b, '_')
			for n > 0 {
				i += n
				n = spaceLen(key[i:])
			}
			continue
		}
		_, n := utf8.DecodeRune(key[i:])
		i += n
	}
	return b
}

// spaceLen is the length of the JavaScript whitespace character at the
// start of b, or 0.
func spaceLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	if b[0] < utf8.RuneSelf {
		if asciiSpace[b[0]] {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRune(b)
	if jsSpace(r) {
		return n
	}
	return 0
}

// jsSpace reports whether r is a non-ASCII character of JavaScript's \s
// (ECMAScript WhiteSpace and LineTerminator).
func jsSpace(r rune) bool {
	switch {
	case r == 0xa0, r == 0x1680, r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029,
		r == 0x202f, r == 0x205f, r == 0x3000, r == 0xfeff:
		return true
	}
	return false
}

// keyByte marks the ASCII bytes kept as they are, asciiSpace those read
// as whitespace. They are variables set by their initializers (not in
// an init function), so that variables derived from them in other
// files are initialized after them.
var keyByte, asciiSpace = keyBytes(), asciiSpaces()

func keyBytes() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == ';' || c == '='
	}
	return t
}

func asciiSpaces() (t [utf8.RuneSelf]bool) {
	for _, c := range "\t\n\v\f\r " {
		t[c] = true
	}
	return t
}
