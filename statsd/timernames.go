package statsd

import (
	"math"
	"regexp"
	"slices"
	"strings"
)

// Indexes of the statistics every timer has.
const (
	statStd = iota
	statUpper
	statLower
	statCount
	statCountPS
	statSum
	statSumSquares
	statMean
	statMedian
	statHistogram
	numStats
)

var statNames = [numStats]string{"std", "upper", "lower", "count", "count_ps", "sum", "sum_squares", "mean", "median", "histogram"}

// Indexes of the statistics of each percent threshold.
const (
	pctCount = iota
	pctMean
	pctBound
	pctSum
	pctSumSquares
	numPctStats
)

// timerNames holds the statistic names of the timers and whether
// CalculatedTimerMetrics keeps each, computed once.
type timerNames struct {
	keep [numStats]bool
	pct  []pctNames
	// bins are the names of each histogram's bins.
	bins [][]string
}

type pctNames struct {
	name [numPctStats]string
	keep [numPctStats]bool
}

func newTimerNames(thresholds []float64, calculated []string, hs []HistogramConfig) timerNames {
	var n timerNames
	for i, name := range statNames {
		n.keep[i] = keepTimerStat(calculated, name)
	}
	for _, pct := range thresholds {
		// process_metrics.js: clean_pct = ('' + pct).replace('.', '_').replace('-', 'top')
		clean := strings.Replace(strings.Replace(jsString(pct), ".", "_", 1), "-", "top", 1)
		bound := "lower_"
		if pct > 0 {
			bound = "upper_"
		}
		var p pctNames
		for i, prefix := range [numPctStats]string{"count_", "mean_", bound, "sum_", "sum_squares_"} {
			p.name[i] = prefix + clean
			p.keep[i] = keepTimerStat(calculated, p.name[i])
		}
		n.pct = append(n.pct, p)
	}
	n.withBins(hs)
	return n
}

// withBins names the bins of the histograms: "histogram.bin_" and the
// limit with its first '.' turned into '_'.
func (n *timerNames) withBins(hs []HistogramConfig) {
	n.bins = make([][]string, len(hs))
	for h, hc := range hs {
		for _, limit := range hc.Bins {
			s := "inf"
			if !math.IsInf(limit, 1) {
				s = strings.Replace(jsString(limit), ".", "_", 1)
			}
			n.bins[h] = append(n.bins[h], "histogram.bin_"+s)
		}
	}
}

// cleanPercent is Etsy's filter_timer_metrics rewrite of a statistic's
// name before looking it up in calculatedTimerMetrics.
var cleanPercent = regexp.MustCompile(`_(top)?\d+$`)

func keepTimerStat(calculated []string, name string) bool {
	if len(calculated) == 0 {
		return true
	}
	return slices.Contains(calculated, cleanPercent.ReplaceAllString(name, "_percent"))
}

// perTimer is about how many statistics a busy timer has.
func (n *timerNames) perTimer(histograms bool) int {
	k := numStats + numPctStats*len(n.pct)
	if histograms {
		k += 8
	}
	return k
}

func (n *timerNames) add(dst []Stat, stat int, v float64) []Stat {
	if !n.keep[stat] {
		return dst
	}
	return append(dst, Stat{Name: statNames[stat], Value: v})
}

func (p *pctNames) add(dst []Stat, stat int, v float64) []Stat {
	if !p.keep[stat] {
		return dst
	}
	return append(dst, Stat{Name: p.name[stat], Value: v})
}
