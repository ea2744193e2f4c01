package main

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/bench/matrix"
)

// TestSmoke runs every scenario on small settings, as `bench run -smoke`
// does, and checks every output: the table, a JSON file that parses and
// holds every contender in every cell with a figure or the reason it has
// none, .hgrm files that parse back, and plots that decode. Under
// BROKERLESS_INTEROP=1 a missing peer fails the run (and so the test).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("smoke run: not with -short")
	}
	dir := t.TempDir()
	start := time.Now()
	if code := run(context.Background(), []string{"run", "-smoke", "-quiet", "-out", dir}); code != 0 {
		t.Fatalf("bench run -smoke: exit status %d", code)
	}
	t.Logf("smoke run took %v", time.Since(start))
	rep, err := matrix.ReadJSON(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Machine.Cores < 1 || rep.Machine.Go == "" || rep.Settings.Rounds < 1 || len(rep.Cells) == 0 {
		t.Errorf("machine or settings missing: %+v %+v", rep.Machine, rep.Settings)
	}
	kinds := map[matrix.Kind]bool{}
	for _, c := range rep.Cells {
		kinds[c.Kind] = true
	}
	for _, k := range matrix.AllKinds {
		if !kinds[k] {
			t.Errorf("scenario %s: no cell", k)
		}
	}
	table, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, c := range rep.Contenders {
		if !strings.Contains(string(table), "| "+c.Name+" |") {
			t.Errorf("table: no row for %s", c.Name)
		}
		for _, cell := range rep.Cells {
			rr := rep.Result(c.Name, cell.ID())
			switch {
			case rr == nil:
				t.Errorf("%s %s: no result", c.Name, cell.ID())
			case rr.Status == "ok":
				ok++
				if len(rr.Rounds) != rep.Settings.Rounds || rr.Summary[cell.Kind.Headline().Name].N != rep.Settings.Rounds {
					t.Errorf("%s %s: %d rounds, want %d", c.Name, cell.ID(), len(rr.Rounds), rep.Settings.Rounds)
				}
			case strings.HasPrefix(rr.Status, "not applicable: "), strings.HasPrefix(rr.Status, "not available: "),
				strings.HasPrefix(rr.Status, "not run: "):
				if !strings.Contains(string(table), rr.Status) {
					t.Errorf("%s %s: status %q not in the table", c.Name, cell.ID(), rr.Status)
				}
			default:
				t.Errorf("%s %s: %s", c.Name, cell.ID(), rr.Status)
			}
		}
	}
	if ok == 0 {
		t.Fatal("no contender measured anything")
	}
	hgrms := 0
	for _, rr := range rep.Results {
		if rr.Hgrm == "" {
			continue
		}
		hgrms++
		f, err := os.Open(filepath.Join(dir, rr.Hgrm))
		if err != nil {
			t.Fatal(err)
		}
		pts, total, err := matrix.ParseHgrm(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", rr.Hgrm, err)
			continue
		}
		if total <= 0 || pts[len(pts)-1].Percentile != 1 {
			t.Errorf("%s: total %d, last percentile %v", rr.Hgrm, total, pts[len(pts)-1].Percentile)
		}
		if p50 := rr.Summary["p50"].Median; p50 > 0 && (pts[0].Value > p50 || pts[len(pts)-1].Value < p50) {
			t.Errorf("%s: values %v..%v µs do not hold the p50 %v µs of the JSON", rr.Hgrm, pts[0].Value, pts[len(pts)-1].Value, p50)
		}
	}
	if hgrms == 0 {
		t.Error("no .hgrm file")
	}
	for _, name := range matrix.Plots {
		f, err := os.Open(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() == 0 || b.Dy() == 0 {
			t.Errorf("%s.png: %v", name, b)
		}
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil || !strings.Contains(string(svg), "<svg") {
			t.Errorf("%s.svg: %v", name, err)
		}
	}
}
