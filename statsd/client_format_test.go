package statsd

import (
	"math"
	"strconv"
	"testing"
	"time"
)

func TestClientNumberFormat(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {-7, "-7"}, {1 << 53, "9007199254740992"},
		{17.25, "17.25"}, {-2.5, "-2.5"}, {0.1, "0.1"}, {0.05, "0.05"}, {-0.000001, "-0.000001"},
		{123456.789, "123456.789"}, {1.0 / 3, "0.3333333333333333"}, {1e20 + 0.5, "100000000000000000000"},
		{1.5e-7, "1.5e-07"}, {1e21, "1e+21"}, {-math.MaxFloat64, "-1.7976931348623157e+308"},
		{5e-324, "5e-324"}, {8.5e15, "8500000000000000"}, {1234567.5, "1234567.5"},
	}
	for _, tc := range cases {
		if got := string(appendClientNumber(nil, tc.v)); got != tc.want {
			t.Errorf("appendClientNumber(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestClientMillisFormat(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {time.Millisecond, "1"}, {1500 * time.Microsecond, "1.5"}, {1234567, "1.234567"},
		{10 * time.Microsecond, "0.01"}, {-time.Nanosecond, "-0.000001"}, {time.Hour, "3600000"},
		{math.MinInt64, "-9223372036854.775808"}, {math.MaxInt64, "9223372036854.775807"},
	}
	for _, tc := range cases {
		if got := string(appendClientMillis(nil, tc.d)); got != tc.want {
			t.Errorf("appendClientMillis(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestClientRateFormat: a sample rate is written in plain decimal,
// however small: this server's parser and Etsy's /^@([\d\.]+)/ take only
// digits and '.', so "|@5e-07" was a bad line here and rate 5 at Etsy.
func TestClientRateFormat(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want string
	}{
		{1, ""}, {0.5, "|@0.5"}, {0.1, "|@0.1"}, {0.000001, "|@0.000001"},
		{5e-7, "|@0.0000005"}, {1e-7, "|@0.0000001"}, {1.25e-10, "|@0.000000000125"},
	} {
		if got := string(appendClientRate(nil, tc.rate)); got != tc.want {
			t.Errorf("appendClientRate(%v) = %q, want %q", tc.rate, got, tc.want)
		}
	}
	for _, rate := range []float64{0.5, 1.0 / 3, 1e-6, 5e-7, 1e-7, 3.3e-15, 1e-308, 5e-324} {
		line := appendClientRate([]byte("tiny.c:1|c"), rate)
		var p Parser
		ms, bad, why := p.AppendLine(nil, line)
		if math.IsInf(1/rate, 0) {
			// Read back exactly, but refused: 1/rate is infinite.
			if bad != 1 || why != ReasonRateTooSmall {
				t.Errorf("client line %q: %d metrics, %d bad (%v); want 1 bad (%v)", line, len(ms), bad, why, ReasonRateTooSmall)
			}
			continue
		}
		if bad != 0 || len(ms) != 1 || ms[0].Rate != rate {
			t.Errorf("client line %q: %d metrics, %d bad (%v); want one counter at rate %v", line, len(ms), bad, why, rate)
		}
	}
}

// Every finite number parses back to itself and fits the scratch buffer.
func FuzzClientNumber(f *testing.F) {
	for _, v := range []float64{0, 1, -1, 17.25, 0.1, 1e-6, 9.999999e-7, 1e21, 1 << 53, 1<<53/1e6 + 0.5, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		b := appendClientNumber(nil, v)
		if len(b) > clientNumberBytes {
			t.Fatalf("%v formats to %d bytes: %s", v, len(b), b)
		}
		back, err := strconv.ParseFloat(string(b), 64)
		if err != nil || back != v {
			t.Fatalf("%v formats to %s, which parses to %v (%v)", v, b, back, err)
		}
	})
}
