package matrix

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// writeHgrms writes each latency distribution (all measured rounds
// merged) as dir/hgrm/CONTENDER_CELL.hgrm: HdrHistogram's percentile
// distribution format, values in microseconds, which HdrHistogram's
// plotter reads.
func (r *Report) writeHgrms(dir string) error {
	if len(r.hists) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, "hgrm"), 0o755); err != nil {
		return err
	}
	for i := range r.Results {
		rr := &r.Results[i]
		h := r.hists[rr.Contender+"|"+rr.Cell]
		if h == nil {
			continue
		}
		rel := filepath.Join("hgrm", fileName(rr.Contender+"_"+rr.Cell)+".hgrm")
		f, err := os.Create(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		_, err = h.PercentilesPrint(w, 5, 1e3)
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		rr.Hgrm = rel
	}
	return nil
}

func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		case r == '%':
			return 'p'
		}
		return '_'
	}, s)
}

// HgrmPoint is one line of a .hgrm file.
type HgrmPoint struct {
	Value      float64 // microseconds
	Percentile float64 // 0..1
	TotalCount int64
}

// ParseHgrm reads a percentile distribution file back: its rows, in
// order (percentiles never decrease), and its total count.
func ParseHgrm(r io.Reader) ([]HgrmPoint, int64, error) {
	sc := bufio.NewScanner(r)
	var pts []HgrmPoint
	var total int64 = -1
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		switch {
		case t == "" || strings.HasPrefix(t, "Value"):
			continue
		case strings.HasPrefix(t, "#[Max"):
			_, after, ok := strings.Cut(t, "Total count")
			if !ok {
				return nil, 0, fmt.Errorf("line %d: no total count in %q", line, t)
			}
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(strings.TrimLeft(after, " =")), "]"), 10, 64)
			if err != nil {
				return nil, 0, fmt.Errorf("line %d: %v", line, err)
			}
			total = n
			continue
		case strings.HasPrefix(t, "#"):
			continue
		}
		f := strings.Fields(t)
		if len(f) != 4 {
			return nil, 0, fmt.Errorf("line %d: %d fields, want 4: %q", line, len(f), t)
		}
		var p HgrmPoint
		var err error
		if p.Value, err = strconv.ParseFloat(f[0], 64); err == nil {
			if p.Percentile, err = strconv.ParseFloat(f[1], 64); err == nil {
				p.TotalCount, err = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %v", line, err)
		}
		if n := len(pts); n > 0 && (p.Percentile < pts[n-1].Percentile || p.Value < pts[n-1].Value) {
			return nil, 0, fmt.Errorf("line %d: goes backwards", line)
		}
		pts = append(pts, p)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	if len(pts) == 0 || total < 0 {
		return nil, 0, fmt.Errorf("no rows or no footer")
	}
	if last := pts[len(pts)-1]; last.TotalCount != total || !slices.IsSortedFunc(pts, func(a, b HgrmPoint) int { return int(a.TotalCount - b.TotalCount) }) {
		return nil, 0, fmt.Errorf("counts do not add up to the footer's %d", total)
	}
	return pts, total, nil
}
