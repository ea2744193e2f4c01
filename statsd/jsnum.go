package statsd

import (
	"math"
	"strconv"
)

// appendJSNumber appends f as JavaScript's Number.prototype.toString
// writes it (ECMAScript Number::toString): the shortest digits that read
// back as f, in fixed notation from 1e-7 up to 1e21 and in exponent
// notation ("1.5e-7", "1e+21") outside. Etsy's Graphite backend writes
// every value this way, so this is what reproduces its output.
func appendJSNumber(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		return append(b, '0')
	case f < 0:
		b = append(b, '-')
		f = -f
	}
	if f < 1e15 && f == math.Trunc(f) {
		return strconv.AppendInt(b, int64(f), 10)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d[.ddd]e±xx
	mant, exp := e, 0
	for i, c := range e {
		if c == 'e' {
			mant = e[:i]
			exp, _ = strconv.Atoi(string(e[i+1:]))
			break
		}
	}
	var digits [24]byte
	k := 0
	for _, c := range mant {
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	d := digits[:k]
	n := exp + 1 // f = 0.d × 10^n
	switch {
	case k <= n && n <= 21:
		b = append(b, d...)
		for i := k; i < n; i++ {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, d[:n]...)
		b = append(b, '.')
		b = append(b, d[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for i := n; i < 0; i++ {
			b = append(b, '0')
		}
		b = append(b, d...)
	default:
		b = append(b, d[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, d[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// jsString is appendJSNumber as a string.
func jsString(f float64) string { return string(appendJSNumber(nil, f)) }

// jsRound is JavaScript's Math.round: the nearest integer, halves
// rounded up (toward +∞).
func jsRound(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r := math.Floor(x)
	if x-r >= 0.5 {
		r++
	}
	return r
}
