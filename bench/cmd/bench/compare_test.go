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
// shared machine does not move a round's median, and enough rounds (10)
// for the U test to separate 10 from 10 after Holm's correction.
func compareSettings() matrix.Settings {
	s := matrix.SmokeSettings()
	s.Kinds = []matrix.Kind{matrix.Latency, matrix.PingPong}
	s.Rounds, s.Warmup = 10, 1
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

// Two runs of the same build: nothing significant. A copy of the second
// run's JSON file with zmq's latency planted twice as long, every round:
// flagged, as worse, and nothing else.
func TestCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("two benchmark runs: not with -short")
	}
	o := matrix.CompareOptions{Alpha: 0.05, MinChange: 0.05}
	a, b := compareRun(t), compareRun(t)
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
