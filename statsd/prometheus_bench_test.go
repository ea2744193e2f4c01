package statsd

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPrometheusRender renders one flush of 10,000 tagged
// counters, 5,000 gauges and 1,000 timers of 100 values each as a
// Prometheus page (histograms, as by default) and, interleaved in the
// same loop, as Graphite lines (Etsy's layout) as a baseline: it
// reports both times per flush and their ratio.
func BenchmarkPrometheusRender(b *testing.B) {
	a := mustAggregator(b, AggregatorConfig{})
	var p Parser
	add := func(line string) {
		ms, _, _ := p.AppendLine(nil, []byte(line))
		for i := range ms {
			a.Add(&ms[i])
		}
		p.Reset()
	}
	for i := 0; i < 10000; i++ {
		add(fmt.Sprintf("app.requests.%d:1|c|#env:prod,host:h%d", i%1000, i/1000))
	}
	for i := 0; i < 5000; i++ {
		add(fmt.Sprintf("app.queue.%d:%d|g", i, i))
	}
	for i := 0; i < 1000; i++ {
		for v := 0; v < 100; v++ {
			add(fmt.Sprintf("app.latency.%d:%d|ms|#env:prod", i, v*7))
		}
	}
	snap := a.Flush(time.Unix(1700000000, 0))
	prom := testPrometheus(b, PrometheusConfig{})
	g, err := NewGraphite(GraphiteConfig{Address: "127.0.0.1:2003"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var tp, tg time.Duration
	var buf []byte
	for b.Loop() {
		start := time.Now()
		prom.Render(snap)
		tp += time.Since(start)
		start = time.Now()
		buf = g.Append(buf[:0], snap)
		tg += time.Since(start)
	}
	b.ReportMetric(float64(tp.Nanoseconds())/float64(b.N), "prom-ns/flush")
	b.ReportMetric(float64(tg.Nanoseconds())/float64(b.N), "graphite-ns/flush")
	b.ReportMetric(float64(tp)/float64(tg), "prom/graphite")
}
