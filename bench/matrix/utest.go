package matrix

import (
	"math"
	"sort"
)

// MannWhitney is the two-sided p-value of the Mann-Whitney U test that
// x and y come from the same distribution (as benchstat uses): exact
// when there are no ties and both samples are small, else the normal
// approximation with the tie correction.
func MannWhitney(x, y []float64) float64 {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type v struct {
		x     float64
		first bool
	}
	all := make([]v, 0, n1+n2)
	for _, a := range x {
		all = append(all, v{a, true})
	}
	for _, b := range y {
		all = append(all, v{b, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].x < all[j].x })
	// Ranks, ties given their mean rank.
	var r1, tieSum float64
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		rank := float64(i+j+1) / 2
		if t := float64(j - i); t > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		for k := i; k < j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		i = j
	}
	u1 := r1 - float64(n1*(n1+1))/2
	u := math.Min(u1, float64(n1*n2)-u1)
	if !ties && n1 <= 50 && n2 <= 50 {
		return math.Min(1, 2*uCDF(int(u), n1, n2))
	}
	n := float64(n1 + n2)
	mu := float64(n1*n2) / 2
	sigma := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieSum/(n*(n-1))))
	if sigma == 0 {
		return 1
	}
	z := (u - mu + 0.5) / sigma
	return math.Min(1, 2*0.5*math.Erfc(-z/math.Sqrt2))
}

// uCDF is P(U ≤ u) for samples of n1 and n2 with no ties: the number
// of arrangements with U ≤ u over all C(n1+n2, n1).
func uCDF(u, n1, n2 int) float64 {
	// f[i][j][k]: arrangements of i and j values with U = k.
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		cur[0] = make([]float64, maxU+1)
		cur[0][0] = 1
		for j := 1; j <= n2; j++ {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= i*j; k++ {
				// The largest value is from the first sample (it beats
				// all j of the second) or from the second.
				var a float64
				if k-j >= 0 {
					a = prev[j][k-j]
				}
				cur[j][k] = a + cur[j-1][k]
			}
		}
		prev = cur
	}
	var below, total float64
	for k, c := range prev[n2] {
		total += c
		if k <= u {
			below += c
		}
	}
	return below / total
}
