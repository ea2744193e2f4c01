package statsd

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSanitize: appendSanitized, which copies runs of kept bytes at
// once, rewrites every key as Etsy's three replaces do when applied
// literally, one after the other, to the decoded characters
// (sanitizeLiterally).
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"api.requests", "a b/c", "a\u00a0\u2003b", "x\xffy", "tag=v;w", "  lead", "trail\t\n", "é.ü-ß_0;9=", "a\v\f\u3000\ufeffb"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		prefix := []byte("p.")
		got := appendSanitized(bytes.Clone(prefix), key)
		want := sanitizeLiterally(bytes.Clone(prefix), key)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: %q, want %q", key, got, want)
		}
	})
}

// sanitizeLiterally is Etsy 0.9.0's sanitizeKeyName step by step on the
// key's characters (an invalid byte decodes to U+FFFD, as in Node):
//
//	key.replace(/\s+/g, '_').replace(/\//g, '-').replace(/[^a-zA-Z_\-0-9\.;=]/g, '')
func sanitizeLiterally(b, key []byte) []byte {
	var rs []rune
	for i := 0; i < len(key); {
		r, n := utf8.DecodeRune(key[i:])
		rs = append(rs, r)
		i += n
	}
	space := func(r rune) bool { return r < utf8.RuneSelf && asciiSpace[r] || r >= utf8.RuneSelf && jsSpace(r) }
	var spaced []rune
	for i := 0; i < len(rs); i++ {
		if !space(rs[i]) {
			spaced = append(spaced, rs[i])
			continue
		}
		spaced = append(spaced, '_')
		for i+1 < len(rs) && space(rs[i+1]) {
			i++
		}
	}
	for _, r := range spaced {
		switch {
		case r == '/':
			b = append(b, '-')
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', strings.ContainsRune("_-.;=", r):
			b = append(b, byte(r))
		}
	}
	return b
}
