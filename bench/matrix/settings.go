package matrix

import (
	"fmt"
	"time"
)

// Settings is every knob of a run; the JSON results record them.
type Settings struct {
	Rounds int   `json:"rounds"` // measured rounds
	Warmup int   `json:"warmup"` // rounds run first and discarded
	Seed   int64 `json:"seed"`

	Kinds []Kind `json:"scenarios"`
	Size  int    `json:"size"`  // payload of every scenario but Throughput's sweep
	Sizes []int  `json:"sizes"` // Throughput's sweep

	// Throughput search.
	StartRate float64       `json:"start_rate"`
	MaxRate   float64       `json:"max_rate"`
	MaxProbes int           `json:"max_probes"`
	ProbeTime time.Duration `json:"probe_time"`
	// SustainedProbeTime is the shortest probe of a UDP server whose
	// socket buffer would absorb a short one (StatsD servers, raw UDP).
	SustainedProbeTime time.Duration `json:"sustained_probe_time"`
	MaxProbeMessages   int           `json:"max_probe_messages"`
	MaxProbeBytes      int           `json:"max_probe_bytes"`

	FanOut []int `json:"fanout"`

	Rates       []float64     `json:"latency_rates"`
	LatencyTime time.Duration `json:"latency_time"`

	PingPongs   int           `json:"pingpongs"`
	PingTimeout time.Duration `json:"ping_timeout"`

	Losses   []float64     `json:"losses"`
	LossRate float64       `json:"loss_rate"`
	LossTime time.Duration `json:"loss_time"`
	// LossQuiet is how long a loss run waits, once sent, for a message
	// that is still missing (repairs take a few NACK rounds).
	LossQuiet time.Duration `json:"loss_quiet"`

	ReadyTimeout time.Duration `json:"ready_timeout"`
	// Contenders, when not empty, runs only these (and their baselines).
	Contenders []string `json:"contenders,omitempty"`
}

// AllKinds are the scenarios in table order.
var AllKinds = []Kind{Throughput, Latency, PingPong, FanOut, Loss, Durability}

// FullSettings is the full matrix: about 15 minutes on 2 shared cores.
func FullSettings() Settings {
	return Settings{
		Rounds: 3, Warmup: 1, Seed: 1,
		Kinds: AllKinds, Size: 256, Sizes: []int{16, 256, 4096, 65536},
		StartRate: 25_000, MaxRate: 1_600_000, MaxProbes: 7, ProbeTime: 100 * time.Millisecond, SustainedProbeTime: 400 * time.Millisecond,
		MaxProbeMessages: 200_000, MaxProbeBytes: 64 << 20,
		FanOut: []int{1, 4, 16},
		Rates:  []float64{1_000, 10_000}, LatencyTime: 500 * time.Millisecond,
		PingPongs: 300, PingTimeout: time.Second,
		Losses: []float64{0.01, 0.05}, LossRate: 10_000, LossTime: 500 * time.Millisecond, LossQuiet: time.Second,
		ReadyTimeout: 10 * time.Second,
	}
}

// SmokeSettings runs every scenario, small: for CI.
func SmokeSettings() Settings {
	s := FullSettings()
	s.Rounds, s.Warmup = 1, 0
	s.Sizes = []int{16, 65536}
	s.StartRate, s.MaxRate, s.MaxProbes, s.ProbeTime, s.SustainedProbeTime = 5_000, 20_000, 3, 40*time.Millisecond, 40*time.Millisecond
	s.FanOut = []int{1, 4}
	s.Rates, s.LatencyTime = []float64{2_000}, 100*time.Millisecond
	s.PingPongs = 50
	s.Losses, s.LossRate, s.LossTime, s.LossQuiet = []float64{0.05}, 2_000, 100*time.Millisecond, 500*time.Millisecond
	return s
}

func (s Settings) validate() error {
	switch {
	case s.Rounds < 1:
		return fmt.Errorf("rounds %d: must be ≥ 1", s.Rounds)
	case s.Warmup < 0:
		return fmt.Errorf("warmup %d: must be ≥ 0", s.Warmup)
	case s.Size < StampSize:
		return fmt.Errorf("size %d: must be ≥ %d", s.Size, StampSize)
	case s.StartRate < minRate || s.MaxRate < s.StartRate:
		return fmt.Errorf("rates %g..%g: need %d ≤ start ≤ max", s.StartRate, s.MaxRate, minRate)
	case s.MaxProbes < 1 || s.ProbeTime <= 0 || s.SustainedProbeTime < 0 || s.MaxProbeMessages < 1 || s.MaxProbeBytes < 1:
		return fmt.Errorf("probes: max-probes, probe-time and their caps must be > 0")
	case s.LatencyTime <= 0 || s.LossTime <= 0 || s.LossQuiet <= 0 || s.PingPongs < 1 || s.PingTimeout <= 0 || s.LossRate <= 0 || s.ReadyTimeout <= 0:
		return fmt.Errorf("latency-time, loss-time, loss-rate, pingpongs, ping-timeout and ready-timeout must be > 0")
	}
	for _, n := range s.Sizes {
		if n < StampSize || n > 1<<20 {
			return fmt.Errorf("size %d: must be %d..%d", n, StampSize, 1<<20)
		}
	}
	for _, n := range s.FanOut {
		if n < 1 || n > 256 {
			return fmt.Errorf("fan-out %d: must be 1..256", n)
		}
	}
	for _, p := range s.Losses {
		if p <= 0 || p >= 1 {
			return fmt.Errorf("loss %g: must be in (0, 1)", p)
		}
	}
	for _, r := range s.Rates {
		if r <= 0 {
			return fmt.Errorf("rate %g: must be > 0", r)
		}
	}
	for _, k := range s.Kinds {
		if _, ok := metricsOf[k]; !ok {
			return fmt.Errorf("scenario %q: not one of %v", k, AllKinds)
		}
	}
	return nil
}

// messagesFor is how many messages a link of cell will carry at most.
func (s Settings) messagesFor(c Cell) int {
	switch c.Kind {
	case Latency:
		return int(c.Rate*s.LatencyTime.Seconds()) + 1000
	case Loss:
		return int(c.Rate*s.LossTime.Seconds()) + 1000
	}
	return s.MaxProbes*s.MaxProbeMessages + 1000
}

// Cells is the matrix's columns, in table order.
func (s Settings) Cells() []Cell {
	var cells []Cell
	for _, k := range s.Kinds {
		switch k {
		case Throughput:
			for _, n := range s.Sizes {
				cells = append(cells, Cell{Kind: k, Size: n, Subscribers: 1})
			}
		case Latency:
			for _, r := range s.Rates {
				cells = append(cells, Cell{Kind: k, Size: s.Size, Subscribers: 1, Rate: r})
			}
		case PingPong:
			cells = append(cells, Cell{Kind: k, Size: s.Size, Subscribers: 1})
		case FanOut:
			for _, n := range s.FanOut {
				cells = append(cells, Cell{Kind: k, Size: s.Size, Subscribers: n})
			}
		case Loss:
			for _, p := range s.Losses {
				cells = append(cells, Cell{Kind: k, Size: s.Size, Subscribers: 1, Rate: s.LossRate, Loss: p})
			}
		case Durability:
			for _, d := range []bool{true, false} {
				cells = append(cells, Cell{Kind: k, Size: s.Size, Subscribers: 1, Durable: d})
			}
		}
	}
	return cells
}
