package store

import (
	"strings"
	"unicode/utf8"
)

// storedText is s as a text column stores it in both dialects: each NUL
// byte, and each run of bytes that is not UTF-8, replaced by U+FFFD.
// PostgreSQL refuses both in a text value (and a \u0000 in the JSON of a
// bulk statement), which failed the whole batch of completions, where
// SQLite kept them as they were; an attempt's error is text a remote
// server or the network may put anything in. (Its response is bytes,
// stored as they came.)
func storedText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
