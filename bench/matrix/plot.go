package matrix

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plots are the files WritePlots writes (each as .png and .svg).
var Plots = []string{"latency", "throughput", "fanout"}

// WritePlots writes, in dir, as PNG and SVG: latency.* (the percentile
// spectrum of each contender at the highest latency rate), throughput.*
// (highest zero-loss rate against payload size) and fanout.* (against
// subscribers). A plot with nothing to show is not written.
func (r *Report) WritePlots(dir string) error {
	for name, mk := range map[string]func() (*plot.Plot, error){
		"latency": r.latencyPlot, "throughput": r.throughputPlot, "fanout": r.fanoutPlot,
	} {
		p, err := mk()
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		if p == nil {
			continue
		}
		for _, ext := range []string{".png", ".svg"} {
			if err := p.Save(10*vg.Inch, 6.5*vg.Inch, filepath.Join(dir, name+ext)); err != nil {
				return err
			}
		}
	}
	return nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

// line adds a contender's line, styled by its index: ours solid, raw
// baselines dashed, peers dotted.
func (r *Report) line(p *plot.Plot, i int, name string, pts plotter.XYs) error {
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	c := palette[i%len(palette)]
	l.Color, s.Color = c, c
	l.Width = vg.Points(1.5)
	s.Shape = plotutil.Shape(i)
	switch r.role(name) {
	case "baseline":
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	case "peer":
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	}
	p.Add(l, s)
	p.Legend.Add(name+" ("+r.role(name)+")", l, s)
	return nil
}

// palette has a distinct color for each of 15 rows (Tableau 20's dark
// and mid tones).
var palette = []color.Color{
	rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd),
	rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf),
	rgb(0x393b79), rgb(0xad494a), rgb(0x637939), rgb(0xe7ba52), rgb(0x000000),
}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// role is "ours", "baseline" or "peer".
func (r *Report) role(name string) string {
	for _, c := range r.Contenders {
		if c.Name == name {
			if c.Baseline == "" {
				return "baseline"
			}
			if c.Peer == "" && c.Baseline != "" && !slices.Contains(ours, name) {
				return "peer"
			}
		}
	}
	if slices.Contains(ours, name) {
		return "ours"
	}
	return "peer"
}

// ours are the contenders that are brokerless's.
var ours = []string{"mcast", "zmq", "logd", "statsd", "webhook"}

func (r *Report) latencyPlot() (*plot.Plot, error) {
	var cell Cell
	for _, c := range r.Cells {
		if c.Kind == Latency && (cell.Kind == "" || c.Rate < cell.Rate) {
			cell = c
		}
	}
	if cell.Kind == "" {
		return nil, nil
	}
	p := newPlot(fmt.Sprintf("Latency by percentile, one way, %s at %.0f msgs/s (all rounds)", sizeName(cell.Size), cell.Rate),
		"percentile", "latency (µs, log)")
	p.X.Scale = plot.LogScale{}
	p.Y.Scale = plot.LogScale{}
	p.X.Tick.Marker = percentileTicks{}
	p.Y.Tick.Marker = rateTicks{}
	n := 0
	for i, c := range r.Contenders {
		pts, err := r.spectrum(c.Name, cell)
		if err != nil {
			return nil, err
		}
		if len(pts) == 0 {
			continue
		}
		if err := r.line(p, i, c.Name, pts); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	headroom(p, n)
	return p, nil
}

// spectrum is a contender's latency by percentile in cell, x = 1/(1-q)
// (HdrHistogram's plot), from its histogram, or from its .hgrm file for
// a report read back from JSON.
func (r *Report) spectrum(name string, cell Cell) (plotter.XYs, error) {
	var pts plotter.XYs
	add := func(q, us float64, total int64) {
		if q >= 1 {
			q = 1 - 1/float64(total)
		}
		pts = append(pts, plotter.XY{X: 1 / (1 - q), Y: math.Max(us, 1)})
	}
	if h := r.hists[name+"|"+cell.ID()]; h != nil {
		for _, b := range h.CumulativeDistributionWithTicks(5) {
			add(b.Quantile/100, float64(b.ValueAt)/1e3, h.TotalCount())
		}
		return pts, nil
	}
	rr := r.Result(name, cell.ID())
	if rr == nil || rr.Hgrm == "" || r.dir == "" {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(r.dir, rr.Hgrm))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, total, err := ParseHgrm(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rr.Hgrm, err)
	}
	for _, row := range rows {
		add(row.Percentile, row.Value, total)
	}
	return pts, nil
}

// headroom raises a log Y axis's top so that the legend, n entries at
// the top of the plot, clears the lines: the data keep the axis's lower
// part, the legend's share of the height is added above them.
func headroom(p *plot.Plot, n int) {
	if p.Y.Min <= 0 || p.Y.Max <= p.Y.Min {
		return
	}
	share := math.Min(0.6, float64(n)*11/420) // ~11 pt a line, ~420 pt of axis
	decades := math.Log10(p.Y.Max / p.Y.Min)
	p.Y.Max *= math.Pow(10, decades*share/(1-share))
}

// rateTicks label 1, 2 and 5 of each decade on a log axis.
type rateTicks struct{}

func (rateTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for d := math.Pow(10, math.Floor(math.Log10(min))); d <= max; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v >= min*0.9999 && v <= max*1.0001 {
				t = append(t, plot.Tick{Value: v, Label: num(v)})
			}
		}
	}
	return t
}

// percentileTicks label 1/(1-q) as percentiles.
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999} {
		x := 1 / (1 - q)
		if x >= min && x <= max*1.0001 {
			t = append(t, plot.Tick{Value: x, Label: strconv.FormatFloat(q*100, 'f', -1, 64) + "%"})
		}
	}
	return t
}

func (r *Report) throughputPlot() (*plot.Plot, error) {
	return r.ratePlot(Throughput, "Highest rate with no message lost, by payload size (median of rounds)", "payload (bytes, log)",
		func(c Cell) float64 { return float64(c.Size) })
}

func (r *Report) fanoutPlot() (*plot.Plot, error) {
	return r.ratePlot(FanOut, "Highest rate with no message lost at any subscriber, by fan-out (median of rounds)", "subscribers (log)",
		func(c Cell) float64 { return float64(c.Subscribers) })
}

func (r *Report) ratePlot(k Kind, title, xlabel string, x func(Cell) float64) (*plot.Plot, error) {
	p := newPlot(title, xlabel, "messages/s (log)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = valueTicks{}
	p.Y.Tick.Marker = rateTicks{}
	p.Legend.Left = false
	n := 0
	for i, c := range r.Contenders {
		var pts plotter.XYs
		for _, cell := range r.Cells {
			rr := r.Result(c.Name, cell.ID())
			if cell.Kind != k || rr == nil || rr.Status != "ok" || rr.Summary["rate"].Median <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: x(cell), Y: rr.Summary["rate"].Median})
		}
		if len(pts) == 0 {
			continue
		}
		if err := r.line(p, i, c.Name, pts); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	headroom(p, n)
	return p, nil
}

// valueTicks label powers of 2 (and 10) on a log axis.
type valueTicks struct{}

func (valueTicks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	for v := 1.0; v <= max*1.0001; v *= 2 {
		if v >= min*0.9999 {
			t = append(t, plot.Tick{Value: v, Label: sizeOrCount(v)})
		}
	}
	return t
}

func sizeOrCount(v float64) string {
	n := int(v)
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dKi", n/1024)
	}
	return strconv.Itoa(n)
}
