package statsd

import (
	"context"
	"io"
	"net/http"
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
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	return fams
}

// value finds the sample of family name whose labels are want (a
// "quantile" entry picks a summary's quantile).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		n := 0
		for k, v := range want {
			if k == "quantile" {
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
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Summary != nil:
			if q, ok := want["quantile"]; ok {
				for _, qq := range m.Summary.Quantile {
					if model.FloatString(qq.GetQuantile()).String() == q {
						return qq.GetValue()
					}
				}
			}
			return float64(m.Summary.GetSampleCount())
		}
	}
	t.Fatalf("%s has no sample with %v", name, want)
	return 0
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
		"9bad-name.x:1|c\na.b:1|c\na-b:5|c\nweird:1|c|#__name__:x,quantile:y,bare",
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
		{"lat", map[string]string{"quantile": "0.5"}, 15},
		{"lat", map[string]string{"quantile": "0.9"}, 20},
		{"_bad_name_x_total", nil, 1},
		{"weird_total", map[string]string{"tag__name__": "x", "tagquantile": "y", "bare": "true"}, 1},
		{"statsd_packets_received_total", nil, 4},
		{"statsd_server_keys_counters", nil, 9},
		{"statsd_server_client_packets_received_total", map[string]string{"client": "web-1"}, 2},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Counters are cumulative across flushes.
	sendUDP(t, addr, "api.hits:10|c|#env:dev")
	waitReceived(t, s, 5, 16)
	s.Flush(context.Background())
	if got := value(t, scrape(t, p), "api_hits_total", map[string]string{"env": "dev"}); got != 12 {
		t.Errorf("second flush: api_hits_total{env=dev} = %v, want 12", got)
	}
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
