package statsd

import (
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// parseNumber reads a decimal number as JavaScript's Number() does for
// the decimal forms (sign, digits, fraction, exponent, surrounding
// spaces), which is what Etsy statsd applies to values: white space
// alone is 0, the empty string nothing (Etsy's isNumber refuses it). It
// rejects what Number() would read as NaN, and the forms this server
// does not take (hexadecimal, "Infinity", and values beyond ±1.8e308).
func parseNumber(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if b = trimSpace(b); len(b) == 0 {
		return 0, true
	}
	if v, ok := smallInt(b); ok {
		return v, true
	}
	i := 0
	if b[0] == '+' || b[0] == '-' {
		i++
	}
	if i == len(b) || !(b[i] >= '0' && b[i] <= '9' || b[i] == '.') {
		return 0, false
	}
	for _, c := range b[i:] {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false
		}
	}
	// strconv copies the string into any error it returns, so viewing
	// b as a string without a copy is safe.
	v, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	return v, err == nil
}

// smallInt reads an optionally signed integer of at most 15 digits, the
// common case, exactly and without strconv.
func smallInt(b []byte) (float64, bool) {
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -float64(n), true
	}
	return float64(n), true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isASCIISpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isASCIISpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isASCIISpace(c byte) bool { return c < utf8.RuneSelf && asciiSpace[c] }
