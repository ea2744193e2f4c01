package statsd

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPrometheusNegativeScaleCounter: a mapping with a negative scale
// never makes a Prometheus counter decrease. As statsd_exporter applies
// the scale before it refuses a negative increment, the values below
// zero, scaled, are added, and those above zero are left out.
func TestPrometheusNegativeScaleCounter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mapping.yml")
	const doc = `mappings:
- match: "flip.*"
  name: "flipped"
  scale: -2
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testPrometheus(t, PrometheusConfig{MappingConfig: path})
	a := mustAggregator(t, AggregatorConfig{})
	prev := 0.0
	for i, step := range []struct {
		lines []string
		total float64
	}{
		{[]string{"flip.a:5|c"}, 0},
		{[]string{"flip.a:-3|c"}, 6},
		{[]string{"flip.a:4|c", "flip.a:-1|c|@0.5"}, 10},
		{[]string{"flip.a:7|c"}, 10},
	} {
		feed(t, a, step.lines...)
		fams := parsePage(t, p.Render(a.Flush(time.Unix(int64(1700000000+10*i), 0))))
		v := value(t, fams, "flipped_total", nil)
		if v < prev {
			t.Errorf("step %d %q: flipped_total went down from %v to %v", i, step.lines, prev, v)
		}
		if v != step.total {
			t.Errorf("step %d %q: flipped_total = %v, want %v", i, step.lines, v, step.total)
		}
		prev = v
	}
}
