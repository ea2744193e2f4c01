package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/bench/matrix"
)

// compareSettings: two cells, zmq and its baseline, in rounds long
// enough (600 messages, 500 round trips) that a scheduling stall of the
// shared machine does not move a round's median, and enough rounds (32,
// split into two sets of 16) for the U test to separate 16 from 16 at
// the 1% level after Holm's correction, stalls and all.
func compareSettings() matrix.Settings {
	s := matrix.SmokeSettings()
	s.Kinds = []matrix.Kind{matrix.Latency, matrix.PingPong}
	s.Rounds, s.Warmup = 32, 1
	s.Contenders = []string{"zmq"}
	s.LatencyTime, s.PingPongs = 300*time.Millisecond, 500
	return s
}

func compareRun(t *testing.T) *matrix.Report {
	t.Helper()
	rep, err := matrix.Run(context.Background(), compareSettings(), matrix.Contenders(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range rep.Results {
		if rr.Status != "ok" {
			t.Fatalf("%s %s: %s", rr.Contender, rr.Cell, rr.Status)
		}
	}
	return rep
}

// halves splits one run's rounds into two results of the same build:
// blocks of as many rounds as there are contenders (a block holds every
// order the runner rotates through) go to one half and the next. The two
// halves were measured alternately, so a change in the shared machine's
// load between two separate runs cannot pass for a difference; what
// compare sees is the noise it must not flag.
func halves(rep *matrix.Report) (a, b *matrix.Report) {
	x, y := *rep, *rep
	x.Results, y.Results = nil, nil
	k := max(len(rep.Contenders), 1)
	for _, rr := range rep.Results {
		ra, rb := rr, rr
		ra.Rounds, rb.Rounds = nil, nil
		for i, m := range rr.Rounds {
			if (i/k)%2 == 0 {
				ra.Rounds = append(ra.Rounds, m)
			} else {
				rb.Rounds = append(rb.Rounds, m)
			}
		}
		x.Results, y.Results = append(x.Results, ra), append(y.Results, rb)
	}
	return &x, &y
}

// Two result sets of the same build (halves of one run, measured
// alternately): nothing significant. A copy of the second with zmq's
// latency planted twice as long, every round: flagged, as worse, and
// nothing else.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("a benchmark run of 32 rounds: not with -short")
	}
	// At the command's default level (-alpha 0.05) the same-build check
	// would itself raise a false alarm in about one CI run of twenty: the
	// test asks for 0.01 (one in a hundred); the planted 2× shows p ≤
	// 0.001 either way.
	o := matrix.CompareOptions{Alpha: 0.01, MinChange: 0.05}
	a, b := halves(compareRun(t))
	var out strings.Builder
	cs := matrix.Compare(a, b, o)
	sig, worse := matrix.WriteComparison(&out, cs, o)
	t.Logf("same build:\n%s", out.String())
	if sig != 0 || worse != 0 {
		t.Errorf("same build: %d significant, %d worse", sig, worse)
	}
	if len(cs) == 0 {
		t.Fatal("nothing compared")
	}

	planted := *b
	planted.Results = nil
	dir := t.TempDir()
	if err := a.WriteJSON(filepath.Join(dir, "old.json")); err != nil {
		t.Fatal(err)
	}
	for _, rr := range b.Results {
		if rr.Contender == "zmq" {
			var rounds []map[string]float64
			for _, m := range rr.Rounds {
				m2 := map[string]float64{}
				for k, v := range m {
					m2[k] = 2 * v
				}
				rounds = append(rounds, m2)
			}
			rr.Rounds = rounds
		}
		planted.Results = append(planted.Results, rr)
	}
	if err := b.WriteJSON(filepath.Join(dir, "new.json")); err != nil {
		t.Fatal(err)
	}
	if err := planted.WriteJSON(filepath.Join(dir, "planted.json")); err != nil {
		t.Fatal(err)
	}
	before, err := matrix.ReadJSON(filepath.Join(dir, "new.json"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := matrix.ReadJSON(filepath.Join(dir, "planted.json"))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	cs = matrix.Compare(before, after, o)
	sig, worse = matrix.WriteComparison(&out, cs, o)
	t.Logf("planted 2× regression:\n%s", out.String())
	flagged := map[string]bool{}
	for _, c := range cs {
		if c.Significant {
			flagged[c.Contender+" "+c.Cell] = true
			if c.Contender != "zmq" || !c.Worse || c.Delta < 0.5 {
				t.Errorf("flagged %+v", c)
			}
		}
	}
	for _, cell := range b.Cells {
		if !flagged["zmq "+cell.ID()] {
			t.Errorf("zmq %s: planted 2× regression not flagged", cell.ID())
		}
	}
	// The command prints the same.
	stdout := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout = w
	code := run(context.Background(), []string{"compare", filepath.Join(dir, "new.json"), filepath.Join(dir, "planted.json")})
	w.Close()
	os.Stdout = stdout
	printed, _ := io.ReadAll(r)
	want := fmt.Sprintf("%d significant change(s), %d worse", len(b.Cells), len(b.Cells))
	if code != 0 || !strings.Contains(string(printed), want) {
		t.Errorf("bench compare: exit status %d, printed:\n%s\nwant %q", code, printed, want)
	}
	if worse != len(b.Cells) || sig != worse {
		t.Errorf("%d significant, %d worse; want %d worse", sig, worse, len(b.Cells))
	}
}
