package matrix

import (
	"fmt"
	"io"
	"math"
	"sort"
)

// Change is one figure compared between two reports.
type Change struct {
	Contender, Cell, Metric string
	// Relative: the figures are each round's ratio to the contender's
	// baseline in that round (the machine's load cancels); otherwise
	// the figures themselves (baselines).
	Relative bool
	Old, New Spread
	Delta    float64 // (new-old)/old of the medians
	P        float64
	// Baseline: the contender is a raw baseline; its figures are the
	// machine's, shown for context and never flagged.
	Baseline    bool
	Significant bool // P below its Holm threshold and |Delta| ≥ MinChange
	Worse       bool // significant, in the metric's bad direction
}

// CompareOptions: what counts as significant.
type CompareOptions struct {
	// Alpha is the chance of flagging anything at all when nothing
	// changed (familywise: Holm's correction over the figures compared).
	Alpha float64
	// MinChange: smaller relative changes are never flagged.
	MinChange float64
	// All compares every metric, not only each cell's headline.
	All bool
}

// Compare compares every figure the two reports share, round by round:
// the Mann-Whitney U test over the rounds (benchstat's test), on each
// round's ratio to the baseline measured in the same round where the
// contender has one (the machine's load cancels out). A run compares
// many figures, so the p-values are corrected (Holm) to keep the
// chance of a false alarm across all of them at Alpha.
func Compare(old, new *Report, o CompareOptions) []Change {
	out := changes(old, new, o)
	holm(out, o)
	return out
}

func changes(old, new *Report, o CompareOptions) []Change {
	var out []Change
	for _, nr := range new.Results {
		or := old.Result(nr.Contender, nr.Cell)
		cell, ok := new.Cell(nr.Cell)
		if or == nil || !ok || nr.Status != "ok" || or.Status != "ok" {
			continue
		}
		base := baselineOf(new, nr.Contender)
		nb, ob := new.Result(base, nr.Cell), old.Result(base, nr.Cell)
		relative := base != "" && nb != nil && ob != nil && nb.Status == "ok" && ob.Status == "ok" &&
			len(nb.Rounds) == len(nr.Rounds) && len(ob.Rounds) == len(or.Rounds)
		ms := metricsOf[cell.Kind]
		if !o.All {
			ms = ms[:1]
		}
		for _, m := range ms {
			ov, nv := values(or, ob, m.Name, relative), values(&nr, nb, m.Name, relative)
			if ov == nil || nv == nil || allEqual(ov, nv) {
				continue
			}
			c := Change{Contender: nr.Contender, Cell: nr.Cell, Metric: m.Name, Relative: relative,
				Baseline: base == "", Old: spreadOf(ov), New: spreadOf(nv), P: MannWhitney(ov, nv)}
			if c.Old.Median != 0 {
				c.Delta = (c.New.Median - c.Old.Median) / math.Abs(c.Old.Median)
			}
			c.Worse = (c.Delta < 0) == m.Higher // kept only if significant
			out = append(out, c)
		}
	}
	return out
}

// holm flags the changes whose p passes Holm's step-down thresholds
// (the smallest p against Alpha/m, the next against Alpha/(m-1), …,
// stopping at the first that fails), baselines left out of the family.
func holm(cs []Change, o CompareOptions) {
	var idx []int
	for i := range cs {
		cs[i].Significant = false
		if !cs[i].Baseline {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return cs[idx[a]].P < cs[idx[b]].P })
	for k, i := range idx {
		if cs[i].P >= o.Alpha/float64(len(idx)-k) {
			break
		}
		cs[i].Significant = math.Abs(cs[i].Delta) >= o.MinChange
	}
	for i := range cs {
		cs[i].Worse = cs[i].Significant && cs[i].Worse
	}
}

func baselineOf(r *Report, name string) string {
	for _, c := range r.Contenders {
		if c.Name == name {
			return c.Baseline
		}
	}
	return ""
}

// values are a metric's rounds, divided by the baseline's if relative;
// nil if a round lacks it (or its baseline's is zero).
func values(rr, base *Result, metric string, relative bool) []float64 {
	var v []float64
	for i, m := range rr.Rounds {
		x, ok := m[metric]
		if !ok {
			return nil
		}
		if relative {
			b := base.Rounds[i][metric]
			if b == 0 {
				return nil
			}
			x /= b
		}
		v = append(v, x)
	}
	return v
}

func allEqual(a, b []float64) bool {
	for _, v := range append(a[1:], b...) {
		if v != a[0] {
			return false
		}
	}
	return true
}

// WriteComparison prints the changes as benchstat does: old and new
// medians with their spread, the change, and p; "~" where it is not
// significant.
func WriteComparison(w io.Writer, cs []Change, o CompareOptions) (significant, worse int) {
	fmt.Fprintf(w, "%-12s %-34s %-12s %-28s %-28s %s\n", "contender", "cell", "metric", "old", "new", "delta")
	for _, c := range cs {
		what := ""
		if c.Relative {
			what = " ×base"
		}
		d := "~"
		if c.Baseline {
			d = "baseline"
			if c.P < 0.05 {
				d = fmt.Sprintf("baseline %+.1f%%: the machine changed", c.Delta*100)
			}
		}
		if c.Significant {
			d = fmt.Sprintf("%+.1f%%", c.Delta*100)
			significant++
			if c.Worse {
				d += " (worse)"
				worse++
			} else {
				d += " (better)"
			}
		}
		fmt.Fprintf(w, "%-12s %-34s %-12s %-28s %-28s %s (p=%.3f n=%d+%d)\n", c.Contender, c.Cell, c.Metric+what,
			cmpSpread(c.Old), cmpSpread(c.New), d, c.P, c.Old.N, c.New.N)
	}
	fmt.Fprintf(w, "\n%d significant change(s), %d worse: Mann-Whitney U over rounds, Holm-corrected to a %.0f%% chance of any false alarm, changes under %.0f%% never flagged; figures of contenders with a baseline are ratios to it, round by round.\n",
		significant, worse, o.Alpha*100, o.MinChange*100)
	return significant, worse
}

func cmpSpread(s Spread) string {
	if s.Median == 0 {
		return "0"
	}
	return fmt.Sprintf("%s ±%.0f%%", num(s.Median), 100*math.Max(s.Max-s.Median, s.Median-s.Min)/math.Abs(s.Median))
}
