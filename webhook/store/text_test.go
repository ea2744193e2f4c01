package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStoredText: whatever the input, the text stored is UTF-8 with no
// NUL, and text that already was is kept as it is.
func FuzzStoredText(f *testing.F) {
	for _, s := range []string{"", "ok", "a\x00b", "\xff\xfe", "caf\xc3", "\uFFFD", "日本\x00語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := storedText(s)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("storedText(%q) = %q", s, got)
		}
		if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 && got != s {
			t.Fatalf("storedText(%q) = %q, want it unchanged", s, got)
		}
	})
}
