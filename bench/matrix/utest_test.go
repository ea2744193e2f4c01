package matrix

import (
	"math"
	"testing"
)

func TestMannWhitney(t *testing.T) {
	for _, c := range []struct {
		x, y []float64
		p    float64
	}{
		// Complete separation of 5 and 5: 2 arrangements of C(10,5)=252.
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{[]float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 2.0 / 252},
		// 3 and 3 can never be significant at 0.05: 2/20.
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.1},
		// Interleaved: no evidence.
		{[]float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}, 0.686},
		{[]float64{1, 1, 1}, []float64{1, 1, 1}, 1},
	} {
		if p := MannWhitney(c.x, c.y); math.Abs(p-c.p) > 0.005 {
			t.Errorf("MannWhitney(%v, %v) = %.4f, want %.4f", c.x, c.y, p, c.p)
		}
	}
}
