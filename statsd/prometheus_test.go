package statsd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func scrape(t *testing.T, p *Prometheus) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + p.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return parsePage(t, body)
}

// parsePage parses an exposition with the Prometheus client libraries'
// parser and checks that no two samples are one series.
func parsePage(t testing.TB, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		id := line[:strings.LastIndexByte(line, ' ')]
		if seen[id] {
			t.Fatalf("series %s written twice:\n%s", id, body)
		}
		seen[id] = true
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("family %s has no HELP", name)
		}
	}
	return fams
}

// value finds the sample of family name whose labels are want (a
// "quantile" entry picks a summary's quantile, an "le" entry a
// histogram's bucket; else a summary or histogram gives its count).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := lookup(fams, name, want)
	if !ok {
		t.Fatalf("%s has no sample with %v", name, want)
	}
	return v
}

func lookup(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		n := 0
		observer := f.GetType() == dto.MetricType_SUMMARY || f.GetType() == dto.MetricType_HISTOGRAM
		for k, v := range want {
			if observer && (k == "quantile" || k == "le" || k == "sum") {
				continue
			}
			if got[k] != v {
				continue next
			}
			n++
		}
		if n != len(got) {
			continue
		}
		_, sum := want["sum"]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Summary != nil:
			if q, ok := want["quantile"]; ok {
				for _, qq := range m.Summary.Quantile {
					if model.FloatString(qq.GetQuantile()).String() == q {
						return qq.GetValue(), true
					}
				}
				return 0, false
			}
			if sum {
				return m.Summary.GetSampleSum(), true
			}
			return float64(m.Summary.GetSampleCount()), true
		case m.Histogram != nil:
			if le, ok := want["le"]; ok {
				for _, b := range m.Histogram.Bucket {
					if model.FloatString(b.GetUpperBound()).String() == le {
						return b.GetCumulativeCountFloat() + float64(b.GetCumulativeCount()), true
					}
				}
				return 0, false
			}
			if sum {
				return m.Histogram.GetSampleSum(), true
			}
			return m.Histogram.GetSampleCountFloat() + float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestPrometheusExposition(t *testing.T) {
	p, err := NewPrometheus(context.Background(), PrometheusConfig{Address: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Backends: []Backend{p}}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	addr := s.UDPAddrs()[0].String()
	sendUDP(t, addr,
		"api.hits:3|c|#env:prod,region:eu\napi.hits:1|c|#region:eu,env:prod\napi.hits:2|c|#env:dev",
		"temp:21.5|g\nlat:10|ms\nlat:20|ms\nlat:30|ms|#q:\"x\nusers:a|s\nusers:b|s",
		"9bad-name.x:1|c\na.b:1|c\na-b:5|c\nweird:1|c|#__name__:x,quantile:y,bare,le:z",
		"_bl.seq:web-1/5|seq\n_bl.seq:web-1/8|seq")
	waitReceived(t, s, 4, 15)
	s.Flush(context.Background())
	fams := scrape(t, p)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"api_hits_total", map[string]string{"env": "prod", "region": "eu"}, 4},
		{"api_hits_total", map[string]string{"env": "dev"}, 2},
		{"temp", nil, 21.5},
		{"users", nil, 2},
		// Timers are histograms in seconds.
		{"lat", nil, 2},
		{"lat", map[string]string{"sum": ""}, 0.03},
		{"lat", map[string]string{"le": "0.01"}, 1},
		{"lat", map[string]string{"le": "0.025"}, 2},
		{"lat", map[string]string{"q": "x", "le": "0.025"}, 0},
		{"lat", map[string]string{"q": "x", "le": "0.05"}, 1},
		// statsd_exporter's escaping: a leading digit gains a '_'.
		{"_9bad_name_x_total", nil, 1},
		// a.b and a-b are one series: counters add up.
		{"a_b_total", nil, 6},
		{"weird_total", map[string]string{"tag___name__": "x", "tag_quantile": "y", "bare": "true", "tag_le": "z"}, 1},
		{"statsd_packets_received_total", nil, 4},
		{"statsd_server_keys", map[string]string{"type": "counter"}, 9}, // with Etsy's 3 own
		{"statsd_server_keys", map[string]string{"type": "timer"}, 2},
		{"statsd_server_client_packets_received_total", map[string]string{"client": "web-1"}, 2},
		{"statsd_server_client_packets_lost_total", map[string]string{"client": "web-1"}, 0}, // 6 and 7 may come yet
		{"statsd_server_prometheus_merged_total", nil, 1},
		{"statsd_server_prometheus_dropped_total", map[string]string{"reason": "collision"}, 0},
		{"statsd_server_kernel_drops_total", nil, 0},
	} {
		if got := value(t, fams, c.name, c.labels); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Counters are cumulative across flushes.
	sendUDP(t, addr, "api.hits:10|c|#env:dev")
	waitReceived(t, s, 5, 16)
	s.Flush(context.Background())
	fams = scrape(t, p)
	if got := value(t, fams, "api_hits_total", map[string]string{"env": "dev"}); got != 12 {
		t.Errorf("second flush: api_hits_total{env=dev} = %v, want 12", got)
	}
	if got := value(t, fams, "lat", map[string]string{"le": "0.025"}); got != 2 {
		t.Errorf("second flush: an idle histogram's bucket = %v, want 2 (cumulative)", got)
	}
	if got := value(t, fams, "statsd_packets_received_total", nil); got != 5 {
		t.Errorf("second flush: statsd_packets_received_total = %v, want 5", got)
	}
}

// promRender feeds lines to an aggregator, flushes it and renders the
// snapshot with p.
func promRender(t testing.TB, p *Prometheus, a *Aggregator, lines ...string) []byte {
	t.Helper()
	feed(t, a, lines...)
	return p.Render(a.Flush(time.Unix(1700000000, 0)))
}

func testPrometheus(t testing.TB, cfg PrometheusConfig) *Prometheus {
	t.Helper()
	cfg.Address = "127.0.0.1:0"
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	p := newPrometheus(cfg)
	if cfg.MappingConfig != "" {
		m, fb, fq, err := loadMapping(cfg.MappingConfig, cfg.Logger)
		if err != nil {
			t.Fatal(err)
		}
		p.mapper, p.fileBuckets, p.fileQuantiles = m, fb, fq
	}
	return p
}

// TestPrometheusSelfCountersCumulative: the server's loss counters add
// up across flushes, so increase() sees every interval.
func TestPrometheusSelfCountersCumulative(t *testing.T) {
	p := testPrometheus(t, PrometheusConfig{})
	var fams map[string]*dto.MetricFamily
	for i, drops := range []uint64{3, 0, 4} {
		s := &Snapshot{}
		s.Server.Listen.KernelDrops = drops
		s.Server.Dropped.Keys = uint64(i)
		s.Server.BackendErrors = map[string]uint64{}
		if i == 1 {
			s.Server.BackendErrors["graphite"] = 2
		}
		s.Server.BackendLinesLost = map[string]uint64{"kafka": uint64(5 * i)}
		s.Server.LastFlushDuration = 1500 * time.Millisecond
		fams = parsePage(t, p.Render(s))
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"statsd_server_kernel_drops_total", nil, 7},
		{"statsd_server_keys_rejected_total", nil, 3},
		{"statsd_server_backend_errors_total", map[string]string{"backend": "graphite"}, 2},
		{"statsd_server_backend_lines_lost_total", map[string]string{"backend": "kafka"}, 15},
		{"statsd_server_flush_duration_seconds", nil, 1.5},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for name, f := range fams {
		if f.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
	}
}

// collisionCorpus are keys whose names collide on a Prometheus page:
// with a summary, with a histogram's and a summary's suffixes, after
// escaping, and with a counter's _total.
var collisionCorpus = []string{
	"t5:10|ms", "t5_count:3|g", "t5_sum:1|c", "t5_bucket:2|g", "u5:10|ms", "u5:4|g",
	"dup.x:1|c", "dup_x:2|c", "dup.g:1|g", "dup_g:2|g",
	"foo:1|c", "foo_total:7|g",
	"s5:1|s", "s5:2|g",
	"e:1|c", "e:2|c|#env:", "e:4|c|#env:prod",
	"h5:1|h", "h5_bucket:1|g",
	"statsd.server.kernel_drops:5|c", "statsd_server_keys:1|g",
}

// TestPrometheusCollisions: the corpus gives a page that parses, has
// no series twice, is the same whatever the order the keys came in, and
// counts what it left out.
func TestPrometheusCollisions(t *testing.T) {
	for _, timers := range []string{TimersHistogram, TimersSummary} {
		t.Run(timers, func(t *testing.T) {
			var logs bytes.Buffer
			p := testPrometheus(t, PrometheusConfig{Timers: timers, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			page := promRender(t, p, mustAggregator(t, AggregatorConfig{}), collisionCorpus...)
			fams := parsePage(t, page)
			reversed := make([]string, len(collisionCorpus))
			for i, l := range collisionCorpus {
				reversed[len(reversed)-1-i] = l
			}
			other := promRender(t, testPrometheus(t, PrometheusConfig{Timers: timers}), mustAggregator(t, AggregatorConfig{}), reversed...)
			if !bytes.Equal(page, other) {
				t.Errorf("the page depends on the order of the keys:\n%s\n----\n%s", page, other)
			}
			// Kept: the timer t5 over the gauges t5_count and t5_bucket;
			// the gauge u5 over the timer u5; the counter foo over the
			// gauge foo_total; the gauge s5 over the set s5; the server's
			// own. e with an empty tag is e: the empty tag is dropped as
			// the key is read.
			if got := value(t, fams, "t5", nil); got != 1 {
				t.Errorf("t5 count = %v, want 1", got)
			}
			if got := value(t, fams, "foo_total", nil); got != 1 {
				t.Errorf("foo_total = %v, want the counter's 1", got)
			}
			if got := value(t, fams, "dup_x_total", nil); got != 3 {
				t.Errorf("dup_x_total = %v, want 3 (dup.x and dup_x add up)", got)
			}
			if got := value(t, fams, "dup_g", nil); got != 1 {
				t.Errorf("dup_g = %v, want dup.g's 1 (the key that sorts first)", got)
			}
			if got := value(t, fams, "e_total", nil); got != 3 {
				t.Errorf("e_total = %v, want 3", got)
			}
			if got := value(t, fams, "statsd_server_kernel_drops_total", nil); got != 0 {
				t.Errorf("statsd_server_kernel_drops_total = %v, want the server's own 0", got)
			}
			if _, ok := fams["t5_count"]; ok && fams["t5_count"].GetType() == dto.MetricType_GAUGE {
				t.Error("the gauge t5_count is on the page beside the timer t5")
			}
			if got := value(t, fams, "u5", nil); got != 4 {
				t.Errorf("u5 = %v, want the gauge's 4", got)
			}
			// Left out: the gauges t5_count, t5_bucket, dup_g, foo_total,
			// h5_bucket, statsd_server_keys, the timer u5, the set s5, the
			// counter statsd.server.kernel_drops. (The counter t5_sum is
			// t5_sum_total: no collision.)
			const want = 9
			if got := value(t, fams, "statsd_server_prometheus_dropped_total", map[string]string{"reason": "collision"}); got != want {
				t.Errorf("dropped{collision} = %v, want %v\n%s", got, want, page)
			}
			if !strings.Contains(logs.String(), "collide") || strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("log = %q, want one line about collisions", logs.String())
			}
			// The next flush logs nothing more within LogGap, and counts again.
			p.Render(mustAggregatorFlush(t, collisionCorpus))
			if strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("second flush logged again within LogGap: %q", logs.String())
			}
		})
	}
}

func mustAggregatorFlush(t testing.TB, lines []string) *Snapshot {
	a := mustAggregator(t, AggregatorConfig{})
	feed(t, a, lines...)
	return a.Flush(time.Unix(1700000000, 0))
}

// TestPrometheusHistogram: timer values become seconds in the
// configured buckets; a sample rate counts each value 1/rate times; h
// and d values stay as sent; buckets, _sum and _count are cumulative.
func TestPrometheusHistogram(t *testing.T) {
	p := testPrometheus(t, PrometheusConfig{Buckets: []float64{0.01, 0.1, 1}})
	a := mustAggregator(t, AggregatorConfig{})
	promRender(t, p, a, "rt:5|ms", "rt:50|ms", "rt:500|ms", "rt:5000|ms", "size:0.05|h", "size:20|d",
		"sampled:5|ms|@0.5", "sampled:500|ms|@0.5")
	fams := parsePage(t, promRender(t, p, a, "rt:5|ms"))
	for _, c := range []struct {
		name, le string
		want     float64
	}{
		{"rt", "0.01", 2}, {"rt", "0.1", 3}, {"rt", "1", 4}, {"rt", "+Inf", 5},
		{"size", "0.1", 1}, {"size", "1", 1}, {"size", "+Inf", 2},
		{"sampled", "0.01", 2}, {"sampled", "0.1", 2}, {"sampled", "1", 4},
	} {
		if got := value(t, fams, c.name, map[string]string{"le": c.le}); got != c.want {
			t.Errorf("%s_bucket{le=%s} = %v, want %v", c.name, c.le, got, c.want)
		}
	}
	for _, c := range []struct {
		name       string
		sum, count float64
	}{{"rt", 5.56, 5}, {"size", 20.05, 2}, {"sampled", 1.01, 4}} {
		if got := value(t, fams, c.name, map[string]string{"sum": ""}); math.Abs(got-c.sum) > 1e-9 {
			t.Errorf("%s_sum = %v, want %v", c.name, got, c.sum)
		}
		if got := value(t, fams, c.name, nil); got != c.count {
			t.Errorf("%s_count = %v, want %v", c.name, got, c.count)
		}
	}
	if h := fams["rt"].GetHelp(); !strings.Contains(h, "seconds") {
		t.Errorf("rt's HELP %q does not say seconds", h)
	}
}

// TestPrometheusSummaryKeepsQuantiles: a summary's quantiles are those
// of the last interval, and NaN, not gone, after an idle one.
func TestPrometheusSummaryKeepsQuantiles(t *testing.T) {
	p := testPrometheus(t, PrometheusConfig{Timers: TimersSummary, Quantiles: []float64{0.5, 0.9}})
	a := mustAggregator(t, AggregatorConfig{})
	fams := parsePage(t, promRender(t, p, a, "rt:10|ms", "rt:20|ms", "rt:30|ms", "rt:40|ms"))
	if got := value(t, fams, "rt", map[string]string{"quantile": "0.5"}); got != 0.025 {
		t.Errorf("median = %v, want 0.025 (Etsy's median, in seconds)", got)
	}
	if got := value(t, fams, "rt", map[string]string{"quantile": "0.9"}); got != 0.04 {
		t.Errorf("0.9 = %v, want 0.04 (Etsy's upper_90)", got)
	}
	fams = parsePage(t, promRender(t, p, a))
	for _, q := range []string{"0.5", "0.9"} {
		v, ok := lookup(fams, "rt", map[string]string{"quantile": q})
		if !ok || !math.IsNaN(v) {
			t.Errorf("idle flush: quantile %s = %v (present %v), want NaN", q, v, ok)
		}
	}
	if got := value(t, fams, "rt", nil); got != 4 {
		t.Errorf("idle flush: rt_count = %v, want 4", got)
	}
}

// mappingDoc is the mapping example of statsd_exporter's README
// (v0.31.0), with the glob, regex and drop examples.
const mappingDoc = `
mappings:
- match: "test.dispatcher.*.*.*"
  name: "dispatcher_events_total"
  labels:
    processor: "$1"
    action: "$2"
    outcome: "$3"
    job: "test_dispatcher"
- match: "*.signup.*.*"
  name: "signup_events_total"
  labels:
    provider: "$2"
    outcome: "$3"
    job: "${1}_server"
- match: "test.timing.*.*.*"
  observer_type: histogram
  histogram_options:
    buckets: [ 0.01, 0.025, 0.05, 0.1 ]
  name: "my_timer"
  labels:
    provider: "$2"
    outcome: "$3"
    job: "${1}_server"
- match: "(.*)\\.(.*)--(.*)\\.status\\.(.*)\\.count"
  match_type: regex
  name: "request_total"
  labels:
    hostname: "$1"
    exec: "$2"
    protocol: "$3"
    code: "$4"
- match: "." 
  match_type: regex
  action: drop
  name: "dropped"
`

// TestPrometheusMapping: a statsd_exporter mapping file names and labels
// metrics as statsd_exporter does; what it drops is counted.
func TestPrometheusMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mapping.yml")
	if err := os.WriteFile(path, []byte(mappingDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testPrometheus(t, PrometheusConfig{MappingConfig: path})
	page := promRender(t, p, mustAggregator(t, AggregatorConfig{}),
		"test.dispatcher.FooProcessor.send.succeeded:1|c",
		"test.dispatcher.FooProcessor.send.succeeded:2|c",
		"foo_product.signup.facebook.failure:1|c|#env:prod",
		"test.timing.web.provider1.ok:20|ms",
		"test.timing.web.provider1.ok:70|ms",
		"host1.exec1--http.status.200.count:3|c",
		"unmatched:1|g")
	fams := parsePage(t, page)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dispatcher_events_total", map[string]string{"processor": "FooProcessor", "action": "send", "outcome": "succeeded", "job": "test_dispatcher"}, 3},
		{"signup_events_total", map[string]string{"provider": "facebook", "outcome": "failure", "job": "foo_product_server", "env": "prod"}, 1},
		{"my_timer", map[string]string{"provider": "provider1", "outcome": "ok", "job": "web_server", "le": "0.025"}, 1},
		{"my_timer", map[string]string{"provider": "provider1", "outcome": "ok", "job": "web_server", "le": "0.1"}, 2},
		{"request_total", map[string]string{"hostname": "host1", "exec": "exec1", "protocol": "http", "code": "200"}, 3},
		{"statsd_server_prometheus_dropped_total", map[string]string{"reason": "mapping"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := fams["unmatched"]; ok {
		t.Errorf("the gauge unmatched is on the page: the catch-all regex drops it\n%s", page)
	}
	if _, ok := lookup(fams, "my_timer", map[string]string{"provider": "provider1", "outcome": "ok", "job": "web_server", "le": "0.005"}); ok {
		t.Error("my_timer has the default buckets, not the mapping's")
	}
}

// TestPrometheusBadMapping: a mapping file statsd_exporter refuses is a
// ConfigError naming MappingConfig.
func TestPrometheusBadMapping(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown.yml": "mappings:\n- match: a.b\n  name: x\n  nonsense: 1\n",
		"noname.yml":  "mappings:\n- match: a.b\n",
		"buckets.yml": "mappings:\n- match: a.b\n  name: x\n  observer_type: histogram\n  histogram_options:\n    buckets: [1, 0.5]\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := PrometheusConfig{Address: "127.0.0.1:0", MappingConfig: path}
		cfg.setDefaults()
		err := cfg.validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "MappingConfig" {
			t.Errorf("%s: err = %v, want a ConfigError on MappingConfig", name, err)
		}
	}
	cfg := PrometheusConfig{Address: "127.0.0.1:0", MappingConfig: filepath.Join(dir, "missing.yml")}
	cfg.setDefaults()
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: err = %v", err)
	}
}

// FuzzPrometheusPage: whatever the keys, the page parses and has no
// series twice.
func FuzzPrometheusPage(f *testing.F) {
	for _, l := range collisionCorpus {
		f.Add(l, "weird:1|c|#__name__:x,quantile:y,bare,le:z")
	}
	f.Add("a\xff:1|c|#k:\xfe", "9:1|ms|#le:1")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, timers := range []string{TimersHistogram, TimersSummary} {
			p := testPrometheus(t, PrometheusConfig{Timers: timers})
			var parser Parser
			parser.NoSanitize = true
			ag := mustAggregator(t, AggregatorConfig{})
			for _, l := range append(strings.Split(a, "\n"), strings.Split(b, "\n")...) {
				ms, _, _ := parser.AppendLine(nil, []byte(l))
				for i := range ms {
					ag.Add(&ms[i])
				}
			}
			parsePage(t, p.Render(ag.Flush(time.Unix(1700000000, 0))))
		}
	})
}

// waitReceived waits until s has received packets packets and lines
// lines since it started.
func waitReceived(t testing.TB, s *Server, packets, lines int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitReceived(ctx, uint64(packets), uint64(lines)); err != nil {
		t.Fatal(err)
	}
}

// waitMetrics waits until the server's aggregator has counted n lines
// (sequence lines included) since the last flush.
func waitMetrics(t testing.TB, s *Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.arrived.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for int(s.agg.lines.value)+int(s.agg.seq.lines) < n {
		if ctx.Err() != nil {
			t.Fatalf("server counted %d lines, want %d", int(s.agg.lines.value)+int(s.agg.seq.lines), n)
		}
		s.arrived.Wait()
	}
}

// TestPrometheusCounterNeverDecreases: a counter value below zero is
// left out of the Prometheus counter (a decrease reads as a reset to
// rate() and increase()), as statsd_exporter refuses it
// (illegal_negative_counter), and counted; the snapshot keeps Etsy's
// arithmetic for the other outputs.
func TestPrometheusCounterNeverDecreases(t *testing.T) {
	a, err := NewAggregator(AggregatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pr := newPrometheus(PrometheusConfig{})
	pr.cfg.setDefaults()
	var p Parser
	for i, step := range []struct {
		lines                       []string
		etsyCount, total, negatives float64
	}{
		{[]string{"c:5|c"}, 5, 5, 0},
		{[]string{"c:-3|c"}, -3, 5, 1},
		{[]string{"c:4|c", "c:-1|c|@0.5", "c:-0|c"}, 2, 9, 2},
	} {
		for _, line := range step.lines {
			ms, _, _ := p.AppendLine(nil, []byte(line))
			for j := range ms {
				a.Add(&ms[j])
			}
		}
		snap := a.Flush(time.Unix(int64(1000+10*i), 0))
		for _, c := range snap.Counters {
			if c.Key == "c" && c.Count != step.etsyCount {
				t.Errorf("step %d: snapshot count %v, want Etsy's %v", i, c.Count, step.etsyCount)
			}
		}
		fams := parsePage(t, pr.Render(snap))
		if v := value(t, fams, "c_total", nil); v != step.total {
			t.Errorf("step %d %q: c_total = %v, want %v", i, step.lines, v, step.total)
		}
		if v := value(t, fams, "statsd_server_negative_increments_total", nil); v != step.negatives {
			t.Errorf("step %d: statsd_server_negative_increments_total = %v, want %v", i, v, step.negatives)
		}
	}
}

// TestPrometheusCounterStaysFinite: an interval whose values sum past
// ±MaxFloat64 (1.5e308 twice is +Inf; the parser refuses a single value
// that 1/rate takes there, x:1e308|c|@0.1), or that would take the
// counter past it, is left out of the Prometheus counter and counted, so
// the counter stays finite and counts on; the snapshot keeps Etsy's
// Infinity, for that interval only.
func TestPrometheusCounterStaysFinite(t *testing.T) {
	a, err := NewAggregator(AggregatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pr := newPrometheus(PrometheusConfig{})
	pr.cfg.setDefaults()
	var p Parser
	inf := math.Inf(1)
	for i, step := range []struct {
		lines                       []string
		etsyCount, total, nonFinite float64
	}{
		{[]string{"c:1|c"}, 1, 1, 0},
		{[]string{"c:1.5e308|c", "c:1.5e308|c", "c:-1e308|c"}, inf, 1, 1},
		{[]string{"c:2|c"}, 2, 3, 1},
		{[]string{"c:1.5e308|c", "c:1e308|c"}, inf, 3, 2},
		{[]string{"c:-1.5e308|c", "c:-1e308|c", "c:5|c"}, -inf, 8, 2},
		{[]string{"c:1.5e308|c", "c:1.5e308|c"}, inf, 8, 3},
		{[]string{"c:1.5e308|c"}, 1.5e308, 1.5e308 + 8, 3},
		{[]string{"c:1.5e308|c"}, 1.5e308, 1.5e308 + 8, 4},
		{[]string{"c:1|c"}, 1, 1.5e308 + 8 + 1, 4},
	} {
		for _, line := range step.lines {
			ms, bad, why := p.AppendLine(nil, []byte(line))
			if bad != 0 {
				t.Fatalf("%q: %v", line, why)
			}
			for j := range ms {
				a.Add(&ms[j])
			}
		}
		snap := a.Flush(time.Unix(int64(1000+10*i), 0))
		for _, c := range snap.Counters {
			if c.Key == "c" && !(c.Count == step.etsyCount || math.IsNaN(c.Count) && math.IsNaN(step.etsyCount)) {
				t.Errorf("step %d: snapshot count %v, want Etsy's %v", i, c.Count, step.etsyCount)
			}
		}
		fams := parsePage(t, pr.Render(snap))
		if v := value(t, fams, "c_total", nil); v != step.total {
			t.Errorf("step %d %q: c_total = %v, want %v", i, step.lines, v, step.total)
		}
		if v := value(t, fams, "statsd_server_nonfinite_increments_total", nil); v != step.nonFinite {
			t.Errorf("step %d: statsd_server_nonfinite_increments_total = %v, want %v", i, v, step.nonFinite)
		}
	}
}

// TestPrometheusHistogramMixedRates: values of one timer sent with
// different sample rates each count 1/their rate times, as
// statsd_exporter observes each value int(1/rate) times (pkg/line), not
// an average weight spread over all of them.
func TestPrometheusHistogramMixedRates(t *testing.T) {
	p := testPrometheus(t, PrometheusConfig{Buckets: []float64{0.01, 1}})
	a := mustAggregator(t, AggregatorConfig{})
	fams := parsePage(t, promRender(t, p, a, "mixed:100|ms|@0.1", "mixed:1|ms", "mixed:2|ms|@0.5"))
	for _, c := range []struct {
		le   string
		want float64
	}{{"0.01", 3}, {"1", 13}, {"+Inf", 13}} {
		if got := value(t, fams, "mixed", map[string]string{"le": c.le}); got != c.want {
			t.Errorf("mixed_bucket{le=%s} = %v, want %v", c.le, got, c.want)
		}
	}
	if got, want := value(t, fams, "mixed", map[string]string{"sum": ""}), 10*0.1+0.001+2*0.002; math.Abs(got-want) > 1e-9 {
		t.Errorf("mixed_sum = %v, want %v", got, want)
	}
}

// TestPrometheusObserverStaysFinite: an interval that would make a
// histogram's or summary's cumulative _sum, _count or buckets not
// finite (values, or the counts 1/rate of small sample rates, summing
// past ±1.8e308) is left out of it and counted, as a counter's
// increment is, so that the series keeps counting the later intervals
// instead of showing +Inf or NaN for ever.
func TestPrometheusObserverStaysFinite(t *testing.T) {
	for _, timers := range []string{TimersHistogram, TimersSummary} {
		t.Run(timers, func(t *testing.T) {
			p := testPrometheus(t, PrometheusConfig{Timers: timers, Buckets: []float64{1, 10}})
			a := mustAggregator(t, AggregatorConfig{})
			for i, step := range []struct {
				name                  string
				lines                 []string
				sum, count, nonFinite float64
			}{
				{"h:1|h", []string{"h:1|h"}, 1, 1, 0},
				{"sum past 1.8e308", []string{"h:1e308|h", "h:1e308|h"}, 1, 1, 1},
				{"h:2|h", []string{"h:2|h"}, 3, 2, 1},
				{"count past 1.8e308", []string{"h:0|h|@1e-308", "h:0|h|@1e-308"}, 3, 2, 2},
				{"h:1|h", []string{"h:1|h"}, 4, 3, 2},
			} {
				fams := parsePage(t, promRender(t, p, a, step.lines...))
				if got := value(t, fams, "h", map[string]string{"sum": ""}); got != step.sum {
					t.Errorf("step %d (%s): h_sum = %v, want %v", i, step.name, got, step.sum)
				}
				if got := value(t, fams, "h", nil); got != step.count {
					t.Errorf("step %d (%s): h_count = %v, want %v", i, step.name, got, step.count)
				}
				if timers == TimersHistogram {
					if got := value(t, fams, "h", map[string]string{"le": "10"}); got != step.count {
						t.Errorf("step %d (%s): h_bucket{le=10} = %v, want %v", i, step.name, got, step.count)
					}
				}
				if got := value(t, fams, "statsd_server_nonfinite_increments_total", nil); got != step.nonFinite {
					t.Errorf("step %d (%s): statsd_server_nonfinite_increments_total = %v, want %v", i, step.name, got, step.nonFinite)
				}
			}
		})
	}
}

// TestPrometheusClosesIdleScrapeConns: a connection that made a request
// and then sends nothing is closed after IdleTimeout, so connections
// opened and left (thousands of them) cannot pile up.
func TestPrometheusClosesIdleScrapeConns(t *testing.T) {
	p, err := NewPrometheus(context.Background(), PrometheusConfig{Address: "127.0.0.1:0", IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle scrape connection after 5s: read %d bytes, %v; want EOF (closed after IdleTimeout 100ms)", n, err)
	}
}
