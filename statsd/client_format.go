package statsd

import (
	"math"
	"strconv"
	"time"
)

// clientLine is one metric, its value already formatted, ready to be
// copied into a packet.
type clientLine struct {
	name  string
	num   []byte // formatted number, or
	str   string // a set member, sanitized while copied
	typ   string // "c", "g", "ms", "h", "d" or "s"
	rate  []byte // "|@0.1", or empty when every event is sent
	tags  []string
	reset bool // a negative absolute gauge: "name:0|g" goes first
}

// size is the length of the line (both lines for a reset gauge), without
// a separator or terminator.
func (l *clientLine) size(prefix, defaultTags string) int {
	n := len(prefix) + len(l.name) + 1 + len(l.num) + len(l.str) + 1 + len(l.typ) + len(l.rate)
	items, tagBytes := 0, len(defaultTags)
	if defaultTags != "" {
		items++
	}
	for _, t := range l.tags {
		if t != "" {
			items++
			tagBytes += len(t)
		}
	}
	if items > 0 {
		n += len("|#") + tagBytes + items - 1
	}
	if l.reset {
		n += n - len(l.num) + len("0") + len("\n")
	}
	return n
}

// appendTo appends the line (both lines for a reset gauge) to b.
func (l *clientLine) appendTo(b []byte, prefix, defaultTags string) []byte {
	if l.reset {
		b = l.appendOne(b, prefix, defaultTags, clientZero)
		b = append(b, '\n')
	}
	return l.appendOne(b, prefix, defaultTags, l.num)
}

var clientZero = []byte("0")

func (l *clientLine) appendOne(b []byte, prefix, defaultTags string, num []byte) []byte {
	b = append(b, prefix...)
	b = appendClientClean(b, l.name, &clientReservedInName)
	b = append(b, ':')
	b = append(b, num...)
	b = appendClientClean(b, l.str, &clientReservedInName)
	b = append(b, '|')
	b = append(b, l.typ...)
	b = append(b, l.rate...)
	more := defaultTags != ""
	if more {
		b = append(b, "|#"...)
		b = append(b, defaultTags...)
	}
	for _, t := range l.tags {
		switch {
		case t == "":
			continue
		case more:
			b = append(b, ',')
		default:
			b = append(b, "|#"...)
			more = true
		}
		b = appendClientClean(b, t, &clientReservedInTag)
	}
	return b
}

// Bytes that would break a line apart: in a name (or a set member) the
// value and field separators and the line end; in a tag the field and
// tag separators and the line end. Each is replaced by '_'.
var (
	clientReservedInName = clientReservedSet(":|\n")
	clientReservedInTag  = clientReservedSet(",|\n")
)

func clientReservedSet(s string) (t [256]bool) {
	for i := range len(s) {
		t[s[i]] = true
	}
	return t
}

// appendClientClean appends s to b with its reserved bytes replaced by
// '_'.
func appendClientClean(b []byte, s string, reserved *[256]bool) []byte {
	n := len(b)
	b = append(b, s...)
	for i := n; i < len(b); i++ {
		if reserved[b[i]] {
			b[i] = '_'
		}
	}
	return b
}

// clientNumberBytes holds any number appendClientNumber writes, with a
// sign: up to 21 integer digits and 17 significant ones.
const clientNumberBytes = 48

// appendClientNumber formats v so that it parses back to v, the way a
// JavaScript Number prints (what Etsy statsd reads): integers plainly,
// other numbers in decimal notation between 1e-6 and 1e21 and in
// exponent notation outside.
func appendClientNumber(b []byte, v float64) []byte {
	a := math.Abs(v)
	switch {
	case a < 1<<53 && v == math.Trunc(v):
		return strconv.AppendInt(b, int64(v), 10)
	case a < 1e-6 || a >= 1e21:
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case a < 1<<53/1e6:
		// Most gauges and histogram values have a few decimals: find the
		// fewest that give back exactly v, far cheaper than the general
		// shortest-digits search.
		for k, p := 1, 10.0; k <= 6; k, p = k+1, p*10 {
			if m := v * p; m == math.Trunc(m) && m/p == v {
				return appendClientDecimal(b, int64(m), k)
			}
		}
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// appendClientDecimal appends m / 10^k with k decimals.
func appendClientDecimal(b []byte, m int64, k int) []byte {
	var t [24]byte
	i := len(t)
	u := uint64(m)
	if m < 0 {
		u = -u
	}
	for range k {
		i--
		t[i] = byte('0' + u%10)
		u /= 10
	}
	i--
	t[i] = '.'
	for {
		i--
		t[i] = byte('0' + u%10)
		if u /= 10; u == 0 {
			break
		}
	}
	if m < 0 {
		i--
		t[i] = '-'
	}
	return append(b, t[i:]...)
}

// appendClientMillis formats d in milliseconds, exactly: 1500µs is
// "1.5".
func appendClientMillis(b []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1e6, 10)
	frac := u % 1e6
	if frac == 0 {
		return b
	}
	var digits [6]byte
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := len(digits)
	for digits[n-1] == '0' {
		n--
	}
	return append(append(b, '.'), digits[:n]...)
}

// appendClientRate appends "|@rate" for a sampled metric, in plain
// decimal however small the rate: Etsy reads digits and '.' only
// (/^@([\d\.]+)/), so an exponent would be a wrong rate there ("@1e-1"
// is 1 to it), although this server and statsd_exporter read it.
func appendClientRate(b []byte, rate float64) []byte {
	if rate >= 1 {
		return b
	}
	b = append(b, "|@"...)
	if rate < 1e-6 {
		return strconv.AppendFloat(b, rate, 'f', -1, 64)
	}
	return appendClientNumber(b, rate)
}
