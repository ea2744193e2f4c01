package matrix

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// outcome is what one round of one cell measured.
type outcome struct {
	metrics map[string]float64
	hist    *hdrhistogram.Histogram // Latency, PingPong, Loss
}

// measure opens a link for cell and measures one round.
func (r *runner) measure(ctx context.Context, c Contender, cell Cell, round int) (outcome, error) {
	if _, ok := c.(netnsed); ok && r.ns != nil {
		return r.inNetns(ctx, c, cell, round)
	}
	if cell.Kind == PingPong {
		return r.pingPong(ctx, c, cell, round)
	}
	o := cell.Options(r.set.messagesFor(cell), r.set.Seed+int64(round))
	l, err := c.Open(ctx, o)
	if err != nil {
		return outcome{}, err
	}
	if t, ok := l.(Tally); ok {
		defer t.Close()
		rate, err := r.searchTally(ctx, t, cell, r.probeTime(c))
		return rateOutcome(cell, rate), err
	}
	s := startSession(l, cell.Size)
	defer s.close()
	if err := s.ready(ctx, r.set.ReadyTimeout); err != nil {
		return outcome{}, errors.Join(err, s.err())
	}
	var out outcome
	switch cell.Kind {
	case Throughput, FanOut, Durability:
		rate, err := r.search(ctx, s, cell, r.probeTime(c))
		if err != nil {
			return outcome{}, err
		}
		out = rateOutcome(cell, rate)
	case Latency:
		out, err = r.openLoop(ctx, s, cell, r.set.LatencyTime, 500*time.Millisecond)
	case Loss:
		out, err = r.openLoop(ctx, s, cell, r.set.LossTime, r.set.LossQuiet)
	default:
		err = fmt.Errorf("unknown scenario %q", cell.Kind)
	}
	if err == nil {
		err = s.err()
	}
	return out, err
}

func rateOutcome(cell Cell, rate float64) outcome {
	m := map[string]float64{"rate": rate}
	switch cell.Kind {
	case Throughput:
		m["MB/s"] = rate * float64(cell.Size) / 1e6
	case FanOut:
		m["deliveries/s"] = rate * float64(cell.Subscribers)
	}
	return outcome{metrics: m}
}

func gapsOf(l Link) (gaps, recovered uint64) {
	for _, s := range l.Subs() {
		c := s.Counts()
		gaps += c.Gaps
		recovered += c.Recovered
	}
	return gaps, recovered
}

// probeRate sends at rate for Settings.ProbeTime and says whether every
// subscriber got every message, none reported lost, and the publisher
// kept to the rate (within 10%).
func (r *runner) probeRate(ctx context.Context, s *session, cell Cell, rate float64, probeTime time.Duration) (bool, error) {
	n := int(rate * probeTime.Seconds())
	n = min(n, r.set.MaxProbeMessages, max(r.set.MaxProbeBytes/cell.Size, 1))
	n = max(n, 20)
	g0, _ := gapsOf(s.link)
	pr := s.begin(n, false)
	// A publisher more than a fifth of the probe behind its schedule has
	// failed it: the rest is not sent.
	took, sent, err := s.sendUpTo(ctx, pr, rate, false, probeTime/5+10*time.Millisecond)
	if err != nil {
		return false, err
	}
	if sent < n {
		return false, ctx.Err()
	}
	s.drain(ctx, pr, int64(n), probeQuiet, max(2*time.Second, time.Duration(took)))
	g1, _ := gapsOf(s.link)
	planned := float64(n-1) / rate * 1e9
	keptUp := float64(took) <= planned*1.1+float64(2*time.Millisecond)
	return pr.all(int64(n)) && g1 == g0 && keptUp, ctx.Err()
}

// search finds the highest rate probeRate passes.
func (r *runner) search(ctx context.Context, s *session, cell Cell, probeTime time.Duration) (float64, error) {
	return r.searchWith(ctx, func(rate float64) (bool, error) { return r.probeRate(ctx, s, cell, rate, probeTime) })
}

// sustained is a contender whose probes last at least
// Settings.SustainedProbeTime: a UDP server whose socket buffer (4 MiB)
// would hold a whole short probe it cannot keep up with (the StatsD
// servers, and raw UDP, their baseline).
type sustained interface{ Sustained() bool }

func (r *runner) probeTime(c Contender) time.Duration {
	if s, ok := c.(sustained); ok && s.Sustained() {
		return max(r.set.ProbeTime, r.set.SustainedProbeTime)
	}
	return r.set.ProbeTime
}

// searchWith finds the highest rate probe passes: up by 4× from
// StartRate until a probe fails (or down by 4× until one passes, past
// MaxProbes if need be, down to minRate), then bisects (geometrically)
// until the two rates are within 15% or MaxProbes probes ran.
func (r *runner) searchWith(ctx context.Context, probe func(rate float64) (bool, error)) (float64, error) {
	rate := r.set.StartRate
	var good, bad float64
	for probes := 0; probes < r.set.MaxProbes || good == 0; probes++ {
		ok, err := probe(rate)
		if err != nil {
			return 0, err
		}
		if ok {
			good = rate
		} else {
			bad = rate
		}
		switch {
		case bad == 0:
			if rate >= r.set.MaxRate {
				return good, nil
			}
			rate = min(rate*4, r.set.MaxRate)
		case good == 0:
			if rate <= minRate {
				return 0, nil
			}
			rate = max(rate/4, minRate)
		default:
			if bad/good < 1.15 {
				return good, nil
			}
			rate = math.Sqrt(good * bad)
		}
	}
	return good, ctx.Err()
}

// probeQuiet is how long a probe waits for a message still missing once
// nothing arrives.
const probeQuiet = 200 * time.Millisecond

// minRate is the lowest rate searched: below it a contender counts as
// delivering nothing without loss.
const minRate = 100

// maxLag is how far behind its schedule an open-loop publisher may fall.
const maxLag = time.Second

// openLoop sends at cell.Rate for d and records each message's latency
// from the time it was due; quiet is how long the drain waits without
// progress (repairs take a few NACK rounds).
func (r *runner) openLoop(ctx context.Context, s *session, cell Cell, d, quiet time.Duration) (outcome, error) {
	n := max(int(cell.Rate*d.Seconds()), 10)
	g0, rec0 := gapsOf(s.link)
	pr := s.begin(n, true)
	// A publisher that cannot keep the rate (its sends block) falls
	// behind; once more than maxLag behind, the rest is not sent:
	// counted as unsent, the latencies of what was sent already show it.
	sent, err := s.sendFor(ctx, pr, cell.Rate, maxLag)
	if err != nil {
		return outcome{}, err
	}
	n = sent
	s.drain(ctx, pr, int64(n), quiet, 10*time.Second)
	g1, rec1 := gapsOf(s.link)
	h := pr.hist()
	m := percentiles(h)
	want := int64(n * len(pr.got))
	got := pr.total()
	if cell.Kind == Loss {
		gaps := int64(g1 - g0)
		m = map[string]float64{
			"delivered": 100 * float64(got) / float64(want),
			"recovered": float64(rec1 - rec0),
			"gaps":      float64(gaps),
			"silent":    float64(max(want-got-gaps, 0)),
			"p99":       m["p99"],
		}
	} else {
		m["lost"] = float64(want - got)
		m["unsent"] = float64(int(pr.hi-pr.lo) - sent)
	}
	return outcome{metrics: m, hist: h}, nil
}

func percentiles(h *hdrhistogram.Histogram) map[string]float64 {
	us := func(v int64) float64 { return float64(v) / 1e3 }
	return map[string]float64{
		"p50": us(h.ValueAtQuantile(50)), "p90": us(h.ValueAtQuantile(90)),
		"p99": us(h.ValueAtQuantile(99)), "p99.9": us(h.ValueAtQuantile(99.9)),
		"max": us(h.Max()),
	}
}
