package matrix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Report is a run's results: what the JSON file holds.
type Report struct {
	Command  []string      `json:"command"`
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Mode     string        `json:"mode"`
	Machine  Machine       `json:"machine"`
	Settings Settings      `json:"settings"`
	// Contenders in table order, with their baselines and peers.
	Contenders []ContenderInfo `json:"contenders"`
	Cells      []Cell          `json:"cells"`
	Results    []Result        `json:"results"`

	hists map[string]*hdrhistogram.Histogram // by contender|cell
	dir   string                             // where ReadJSON found it (for its .hgrm files)
}

// ContenderInfo is a row.
type ContenderInfo struct {
	Name     string `json:"name"`
	Baseline string `json:"baseline,omitempty"`
	Peer     string `json:"peer,omitempty"`
}

// Result is one contender in one cell.
type Result struct {
	Contender string `json:"contender"`
	Cell      string `json:"cell"`
	// Status is "ok", or why there is no figure: "not applicable: …",
	// "not available: …", "failed: …".
	Status string `json:"status"`
	// Took is how long its measurements took, warm-up included.
	Took time.Duration `json:"took_ns"`
	// Rounds are the measured rounds' metrics (warm-up discarded).
	Rounds []map[string]float64 `json:"rounds,omitempty"`
	// Summary is, per metric, the median and spread over the rounds.
	Summary map[string]Spread `json:"summary,omitempty"`
	// VsBaseline and VsPeer are the headline metric divided by the
	// baseline's (or the peer's) in the same round and cell, summarised
	// over the rounds in which both ran.
	VsBaseline *Spread `json:"vs_baseline,omitempty"`
	VsPeer     *Spread `json:"vs_peer,omitempty"`
	// Hgrm is the .hgrm file of the latency distribution (all measured
	// rounds merged), relative to the JSON file's folder.
	Hgrm string `json:"hgrm,omitempty"`
}

// Spread is a median and the range over rounds.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func spreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Result returns the result of contender in cell.
func (r *Report) Result(contender, cell string) *Result {
	for i := range r.Results {
		if r.Results[i].Contender == contender && r.Results[i].Cell == cell {
			return &r.Results[i]
		}
	}
	return nil
}

// Cell returns the cell called id.
func (r *Report) Cell(id string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.ID() == id {
			return c, true
		}
	}
	return Cell{}, false
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads a report WriteJSON wrote.
func ReadJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	r.dir = filepath.Dir(path)
	return &r, nil
}
