package matrix

import (
	"fmt"
	"math"
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
			if err := p.Save(9*vg.Inch, 5.5*vg.Inch, filepath.Join(dir, name+ext)); err != nil {
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
	c := plotutil.Color(i)
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
		if c.Kind == Latency && c.Rate >= cell.Rate {
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
		h := r.hists[c.Name+"|"+cell.ID()]
		if h == nil {
			continue
		}
		var pts plotter.XYs
		for _, b := range h.CumulativeDistributionWithTicks(5) {
			q := b.Quantile / 100
			if q >= 1 {
				q = 1 - 1/float64(h.TotalCount())
			}
			pts = append(pts, plotter.XY{X: 1 / (1 - q), Y: math.Max(float64(b.ValueAt)/1e3, 1)})
		}
		if err := r.line(p, i, c.Name, pts); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	headroom(p, 20)
	return p, nil
}

// headroom raises a log Y axis's top by factor, so the legend (at the
// top) clears the lines.
func headroom(p *plot.Plot, factor float64) {
	p.Y.Max *= factor
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
	headroom(p, 6)
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
