package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Progress hears of each measurement as it starts: done of total, and
// what it is.
type Progress func(done, total int, what string)

// storer is a contender that stores messages, with durability on or off.
type storer interface{ Stores() bool }

type runner struct {
	set Settings
	ns  *netns // for contenders that run in a network namespace
}

// Run measures every contender in every cell of set, in interleaved
// rounds: each round goes through the cells, and in each cell through
// the contenders, in an order that rotates from round to round and cell
// to cell. requirePeers makes a contender that is not available an
// error (BROKERLESS_INTEROP=1).
func Run(ctx context.Context, set Settings, cs []Contender, requirePeers bool, progress Progress) (*Report, error) {
	if err := set.validate(); err != nil {
		return nil, err
	}
	cs = selectContenders(cs, set.Contenders)
	defer func() {
		for _, c := range cs {
			if cl, ok := c.(io.Closer); ok {
				cl.Close()
			}
		}
	}()
	r := &runner{set: set, ns: &netns{}}
	defer r.ns.remove()
	rep := &Report{Command: os.Args, Started: time.Now().UTC(), Mode: "one machine: every publisher and subscriber in this process, over loopback",
		Machine: ThisMachine(), Settings: set, Cells: set.Cells()}
	for _, c := range cs {
		rep.Contenders = append(rep.Contenders, ContenderInfo{Name: c.Name(), Baseline: c.Baseline(), Peer: c.Peer()})
	}
	res := make([][]*Result, len(rep.Cells))
	for ci, cell := range rep.Cells {
		for _, c := range cs {
			st := "ok"
			if err := can(c, cell); err != nil {
				st = err.Error()
				if requirePeers && errors.Is(err, ErrUnavailable) && !errors.Is(err, errNeedsNetns) {
					return nil, fmt.Errorf("%s: %w (BROKERLESS_INTEROP=1 requires every peer)", c.Name(), err)
				}
			}
			res[ci] = append(res[ci], &Result{Contender: c.Name(), Cell: cell.ID(), Status: st})
		}
	}
	if err := r.interleave(ctx, rep, cs, res, r.measure, progress, ""); err != nil {
		return nil, err
	}
	return rep, nil
}

// measureFunc measures contender c in cell for one round.
type measureFunc func(ctx context.Context, c Contender, cell Cell, round int) (outcome, error)

// interleave measures every contender whose result res[cell][contender]
// is "ok" in every cell of rep, round after round, in an order that
// rotates from round to round and cell to cell; it discards the warm-up
// rounds, marks a contender that fails a round as failed in that cell,
// and fills rep's results, histograms, ratios, elapsed time and load.
// suffix ends each progress line.
func (r *runner) interleave(ctx context.Context, rep *Report, cs []Contender, res [][]*Result, measure measureFunc, progress Progress, suffix string) error {
	set := r.set
	hists := make([][]*hdrhistogram.Histogram, len(rep.Cells))
	for ci := range hists {
		hists[ci] = make([]*hdrhistogram.Histogram, len(cs))
	}
	total := (set.Warmup + set.Rounds) * len(rep.Cells) * len(cs)
	done := 0
	for round := range set.Warmup + set.Rounds {
		for ci, cell := range rep.Cells {
			for j := range cs {
				i := (j + round + ci) % len(cs)
				c, rr := cs[i], res[ci][i]
				if progress != nil {
					progress(done, total, fmt.Sprintf("round %d/%d %s %s%s", round+1, set.Warmup+set.Rounds, cell.ID(), c.Name(), suffix))
				}
				done++
				if rr.Status != "ok" {
					continue
				}
				t0 := time.Now()
				out, err := measure(ctx, c, cell, round)
				rr.Took += time.Since(t0)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err != nil {
					rr.Status = fmt.Sprintf("failed: round %d: %v", round+1, oneLine(err))
					rr.Rounds = nil
					continue
				}
				if round < set.Warmup {
					continue
				}
				rr.Rounds = append(rr.Rounds, out.metrics)
				if out.hist != nil {
					if hists[ci][i] == nil {
						hists[ci][i] = newHist()
					}
					hists[ci][i].Merge(out.hist)
				}
			}
		}
	}
	if progress != nil {
		progress(total, total, "done")
	}
	rep.hists = map[string]*hdrhistogram.Histogram{}
	for ci := range rep.Cells {
		for i, rr := range res[ci] {
			rr.summarise()
			rep.Results = append(rep.Results, *rr)
			if h := hists[ci][i]; h != nil && rr.Status == "ok" {
				rep.hists[rr.Contender+"|"+rr.Cell] = h
			}
		}
	}
	for i := range rep.Results {
		rep.ratios(&rep.Results[i])
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.Machine.LoadAtEnd = loadAvg()
	return nil
}

func can(c Contender, cell Cell) error {
	if err := c.Can(cell.Options(0, 0)); err != nil {
		return err
	}
	if cell.Kind == Durability {
		if s, ok := c.(storer); !ok || !s.Stores() {
			return fmt.Errorf("%w: stores nothing", ErrNotApplicable)
		}
	}
	return nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// selectContenders keeps names and the baselines they need (all when
// names is empty).
func selectContenders(cs []Contender, names []string) []Contender {
	if len(names) == 0 {
		return cs
	}
	keep := map[string]bool{}
	for _, c := range cs {
		if slices.Contains(names, c.Name()) {
			keep[c.Name()] = true
			if c.Baseline() != "" {
				keep[c.Baseline()] = true
			}
		}
	}
	return slices.DeleteFunc(slices.Clone(cs), func(c Contender) bool { return !keep[c.Name()] })
}

func (rr *Result) summarise() {
	if rr.Status != "ok" || len(rr.Rounds) == 0 {
		return
	}
	rr.Summary = map[string]Spread{}
	for name := range rr.Rounds[0] {
		var v []float64
		for _, m := range rr.Rounds {
			v = append(v, m[name])
		}
		rr.Summary[name] = spreadOf(v)
	}
}

// ratios sets rr's ratios to its baseline and peer, round by round.
func (r *Report) ratios(rr *Result) {
	cell, ok := r.Cell(rr.Cell)
	if !ok || rr.Status != "ok" {
		return
	}
	var info ContenderInfo
	for _, c := range r.Contenders {
		if c.Name == rr.Contender {
			info = c
		}
	}
	h := cell.Kind.Headline().Name
	ratio := func(other string) *Spread {
		o := r.Result(other, rr.Cell)
		if other == "" || o == nil || o.Status != "ok" || len(o.Rounds) != len(rr.Rounds) {
			return nil
		}
		var v []float64
		for i := range rr.Rounds {
			if d := o.Rounds[i][h]; d != 0 {
				v = append(v, rr.Rounds[i][h]/d)
			}
		}
		if len(v) == 0 {
			return nil
		}
		s := spreadOf(v)
		return &s
	}
	rr.VsBaseline, rr.VsPeer = ratio(info.Baseline), ratio(info.Peer)
}
