package statsd

import (
	"math"
	"testing"
)

// The expected strings are what Node 20 prints for each value
// (String(x)).
func TestAppendJSNumber(t *testing.T) {
	tenth := 0.1 // a variable: constants add exactly
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {0.1, "0.1"},
		{tenth + 0.2, "0.30000000000000004"}, {1.0 / 3, "0.3333333333333333"}, {100, "100"},
		{123456789012345680000, "123456789012345680000"}, {1e21, "1e+21"}, {1.5e21, "1.5e+21"},
		{1e-6, "0.000001"}, {1.5e-6, "0.0000015"}, {1e-7, "1e-7"}, {1.25e-7, "1.25e-7"},
		{2.5, "2.5"}, {-0.5, "-0.5"}, {1e15, "1000000000000000"}, {123.456, "123.456"},
		{5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"}, {3.3333333333333335, "3.3333333333333335"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
		{4.35, "4.35"}, {9007199254740993, "9007199254740992"},
	} {
		if got := jsString(tc.f); got != tc.want {
			t.Errorf("jsString(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestJSRound(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{0.5, 1}, {1.5, 2}, {2.5, 3}, {0.49999999999999994, 0}, {-0.5, 0}, {-1.5, -1}, {8.1, 8}, {2.7, 3},
	} {
		if got := jsRound(tc.x); got != tc.want {
			t.Errorf("jsRound(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}
