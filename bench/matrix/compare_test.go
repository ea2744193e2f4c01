package matrix

import (
	"context"
	"strings"
	"testing"
	"time"
)

// compareSettings: two cells in which every contender has a figure, in
// enough rounds for the U test to separate 8 from 8.
func compareSettings() Settings {
	s := SmokeSettings()
	s.Kinds = []Kind{Latency, PingPong}
	s.Rounds, s.Warmup = 8, 1
	s.Contenders = []string{"zmq", "mcast"}
	s.LatencyTime, s.PingPongs = 200*time.Millisecond, 100
	return s
}

func compareRun(t *testing.T) *Report {
	t.Helper()
	rep, err := Run(context.Background(), compareSettings(), Contenders(), false, nil)
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

// Two runs of the same build: nothing significant. A copy of the second
// run's JSON file with zmq's latency planted twice as long, every round:
// flagged, as worse, and nothing else.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("two benchmark runs: not with -short")
	}
	o := CompareOptions{Alpha: 0.05, MinChange: 0.05}
	a, b := compareRun(t), compareRun(t)
	var out strings.Builder
	cs := Compare(a, b, o)
	sig, worse := WriteComparison(&out, cs, o)
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
	if err := b.WriteJSON(dir + "/new.json"); err != nil {
		t.Fatal(err)
	}
	if err := planted.WriteJSON(dir + "/planted.json"); err != nil {
		t.Fatal(err)
	}
	before, err := ReadJSON(dir + "/new.json")
	if err != nil {
		t.Fatal(err)
	}
	after, err := ReadJSON(dir + "/planted.json")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	cs = Compare(before, after, o)
	sig, worse = WriteComparison(&out, cs, o)
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
	if worse != len(b.Cells) || sig != worse {
		t.Errorf("%d significant, %d worse; want %d worse", sig, worse, len(b.Cells))
	}
}
