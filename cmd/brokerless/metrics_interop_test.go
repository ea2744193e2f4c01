package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerless/brokerless/transport/peertest"
)

// installPrometheus installs promtool and prometheus, the peers here.
const installPrometheus = "apt-get install prometheus (.ci/install.d/60-metrics.sh)"

// metricsPeers are a statsd command serving Prometheus' /metrics (1 s
// flushes, at most maxKeys keys, a mapping from statsd_exporter's
// documentation, buckets 0.1 … 1 s) and a logd command serving its
// /metrics, both in this process.
type metricsPeers struct {
	statsdUDP, statsdMetrics string
	logdKafka, logdMetrics   string
}

func startMetricsPeers(t *testing.T, ctx context.Context, maxKeys int) *metricsPeers {
	t.Helper()
	mapping := filepath.Join(t.TempDir(), "mapping.yml")
	if err := os.WriteFile(mapping, []byte(`mappings:
- match: "test.dispatcher.*.*.*"
  name: "dispatcher_events_total"
  labels:
    processor: "$1"
    action: "$2"
    outcome: "$3"
    job: "test_dispatcher"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, done := startStatsd(t, ctx, "--udp", "127.0.0.1:0", "--prometheus", "127.0.0.1:0", "--flush-interval", "1s",
		"--max-keys", strconv.Itoa(maxKeys), "--evict-idle-flushes", "-1", "--mapping-config", mapping,
		"--prometheus-buckets", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1")
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("statsd: %v", err)
		}
	})
	p := &metricsPeers{}
	if m := regexp.MustCompile(`udp (127\.0\.0\.1:\d+)`).FindStringSubmatch(errOut.String()); m != nil {
		p.statsdUDP = m[1]
	}
	if m := regexp.MustCompile(`prometheus (http://127\.0\.0\.1:\d+/metrics)`).FindStringSubmatch(errOut.String()); m != nil {
		p.statsdMetrics = m[1]
	}
	if p.statsdUDP == "" || p.statsdMetrics == "" {
		t.Fatalf("statsd's addresses not found in:\n%s", errOut)
	}
	kafka, lerr, ldone := startLogd(t, ctx, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auto-create")
	t.Cleanup(func() {
		if err := <-ldone; err != nil {
			t.Errorf("logd: %v", err)
		}
	})
	p.logdKafka = kafka
	m := regexp.MustCompile(`logd http on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(lerr.String())
	if m == nil {
		t.Fatalf("logd's http address not found in:\n%s", lerr)
	}
	p.logdMetrics = m[1] + "/metrics"
	return p
}

func (p *metricsPeers) send(t *testing.T, lines ...string) {
	t.Helper()
	c, err := net.Dial("udp", p.statsdUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, l := range lines {
		if _, err := c.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
}

// groupLag produces records to topic t of logd, has group g consume and
// commit the first n, then produces lag more.
func groupLag(t *testing.T, ctx context.Context, addr, topic, group string, n, lag int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(k int) {
		for i := 0; i < k; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(n)
	g, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for got := 0; got < n; {
		fs := g.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("group %s consumed %d of %d: %v", group, got, n, err)
		}
		got += fs.NumRecords()
	}
	if err := g.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	produce(lag)
}

// scrapeText fetches a /metrics page.
func scrapeText(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// promtool runs `promtool check metrics` on a page: it must report
// nothing.
func promtool(t *testing.T, name string, page []byte) {
	t.Helper()
	cmd := exec.Command(peertest.LookPath(t, "promtool", installPrometheus), "check", "metrics")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on %s: %v\n%s\npage:\n%s", name, err, out, page)
	}
}

// TestPromtoolPages: `promtool check metrics` is clean on statsd's and
// logd's pages, also after keys whose names collide on the page and a
// counter increment that is not finite.
func TestPromtoolPages(t *testing.T) {
	peertest.LookPath(t, "promtool", installPrometheus)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := startMetricsPeers(t, ctx, 1000)
	t.Cleanup(cancel) // runs before the peers' cleanups wait for them
	groupLag(t, ctx, p.logdKafka, "orders", "billing", 5, 3)
	// Collisions: t5_count and t5_bucket with the histogram t5, the
	// gauge u5 with the timer u5, dup.x with dup_x, foo_total with
	// foo_total, h5_bucket with the histogram h5, the set s5 with the
	// gauge s5, a key with the server's own name: 7 left out, 1 merged.
	// A counter whose values, each finite, sum past MaxFloat64 in one
	// interval (Etsy adds Infinity; a single value whose 1/rate takes it
	// there is a bad line): left out and counted, the counter stays at 0.
	p.send(t, "rt:250|ms\nreq:1|c|#env:prod,flag\nweird:1|c|#__name__:x,quantile:y,le:z\ninf:1e308|c\ninf:1e308|c",
		"t5:10|ms\nt5_count:3|g\nt5_bucket:2|g\nu5:10|ms\nu5:4|g\ndup.x:1|c\ndup_x:2|c\nfoo:1|c\nfoo_total:7|g\ne:2|c|#env:",
		"h5:1|h\nh5_bucket:1|g\ns5:1|s\ns5:2|g\nstatsd.server.kernel_drops:5|c")
	deadline := time.Now().Add(20 * time.Second)
	for {
		page := scrapeText(t, p.statsdMetrics)
		if bytes.Contains(page, []byte(`statsd_server_prometheus_dropped_total{reason="collision"} 7`)) &&
			bytes.Contains(page, []byte(`statsd_server_prometheus_merged_total 1`)) &&
			bytes.Contains(page, []byte("\nstatsd_server_nonfinite_increments_total 1\n")) &&
			bytes.Contains(page, []byte("\ninf_total 0\n")) &&
			bytes.Contains(page, []byte("\nrt_bucket")) {
			promtool(t, "statsd", page)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("statsd's page never showed the collisions:\n%s", page)
		}
		time.Sleep(200 * time.Millisecond) // flushes come once a second
	}
	page := scrapeText(t, p.logdMetrics)
	if !bytes.Contains(page, []byte(`kafka_consumergroup_lag{consumergroup="billing",partition="0",topic="orders"} 3`)) {
		t.Errorf("logd's page lacks the group's lag:\n%s", page)
	}
	promtool(t, "logd", page)
}

// prometheus is a real Prometheus server scraping the peers every
// second, with its data in a temporary directory.
type prometheus struct {
	url string
	log *syncBuffer
}

func startPrometheus(t *testing.T, targets map[string]string) *prometheus {
	t.Helper()
	bin := peertest.LookPath(t, "prometheus", installPrometheus)
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n")
	for job, u := range targets {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "- job_name: %s\n  metrics_path: %s\n  static_configs:\n  - targets: ['%s']\n", job, pu.Path, pu.Host)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	log := newSyncBuffer("")
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.console.templates="+dir, "--web.console.libraries="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	p := &prometheus{url: "http://" + addr, log: log}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready at %s:\n%s", p.url, log)
		}
	}
}

// query runs an instant PromQL query and returns its samples: labels
// (without __name__) and value.
func (p *prometheus) query(t *testing.T, q string) []promSample {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, r.Error)
	}
	var out []promSample
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		delete(s.Metric, "__name__")
		out = append(out, promSample{s.Metric, v})
	}
	return out
}

type promSample struct {
	labels map[string]string
	value  float64
}

// waitQuery polls a query until ok accepts its samples.
func (p *prometheus) waitQuery(t *testing.T, q string, ok func([]promSample) bool) []promSample {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		got := p.query(t, q)
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %s: %v", q, got)
		}
		time.Sleep(250 * time.Millisecond) // Prometheus scrapes once a second
	}
}

// TestRealPrometheus: Debian's Prometheus scrapes a statsd command and a
// logd command every second, and its HTTP API answers what a user would
// ask: both are up, a tagged counter has its labels and value, a mapped
// counter its mapping's name and labels, increase() sees the keys the
// server rejected, histogram_quantile() over a timer's buckets falls in
// the right bucket, logd's group lag is there under kafka_exporter's
// name, and no scrape failed.
func TestRealPrometheus(t *testing.T) {
	peertest.LookPath(t, "prometheus", installPrometheus)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peers := startMetricsPeers(t, ctx, 4)
	t.Cleanup(cancel)
	prom := startPrometheus(t, map[string]string{"statsd": peers.statsdMetrics, "logd": peers.logdMetrics})
	groupLag(t, ctx, peers.logdKafka, "orders", "billing", 10, 7)

	// Timers 10, 20, … 1000 ms: the 0.9 quantile is 0.9 s, in the
	// bucket (0.8, 0.9].
	var timers []string
	for v := 10; v <= 1000; v += 10 {
		timers = append(timers, fmt.Sprintf("rt:%d|ms|#env:prod", v))
	}
	peers.send(t, "req:3|c|#env:prod,region:eu,flag\nreq:2|c|#flag,region:eu,env:prod",
		"test.dispatcher.FooProcessor.send.succeeded:4|c", strings.Join(timers[:50], "\n"), strings.Join(timers[50:], "\n"))

	prom.waitQuery(t, `up`, func(s []promSample) bool {
		return len(s) == 2 && s[0].value == 1 && s[1].value == 1
	})
	prom.waitQuery(t, `req_total`, func(s []promSample) bool {
		return len(s) == 1 && s[0].value == 5 && fmt.Sprint(s[0].labels) == fmt.Sprint(map[string]string{
			"env": "prod", "region": "eu", "flag": "true", "instance": s[0].labels["instance"], "job": "statsd"})
	})
	// The mapping's job label meets the target's: Prometheus keeps the
	// page's as exported_job (honor_labels: false).
	prom.waitQuery(t, `dispatcher_events_total{processor="FooProcessor",action="send",outcome="succeeded",exported_job="test_dispatcher"}`,
		func(s []promSample) bool { return len(s) == 1 && s[0].value == 4 })
	prom.waitQuery(t, `rt_count{env="prod"}`, func(s []promSample) bool { return len(s) == 1 && s[0].value == 100 })
	got := prom.waitQuery(t, `histogram_quantile(0.9, rt_bucket{env="prod"})`, func(s []promSample) bool {
		return len(s) == 1 && !math.IsNaN(s[0].value)
	})
	if v := got[0].value; v < 0.8 || v > 0.9 {
		t.Errorf("histogram_quantile(0.9) = %v, want within the bucket (0.8, 0.9]", v)
	}
	// The server holds 4 keys (req, the mapped counter, rt, and
	// this one): new keys are rejected and counted.
	peers.send(t, "k1:1|c\nk2:1|c\nk3:1|c")
	prom.waitQuery(t, `increase(statsd_server_keys_rejected_total[1m])`, func(s []promSample) bool {
		return len(s) == 1 && s[0].value > 0
	})
	// k1 took the fourth place; k2 and k3 were rejected, and stay
	// counted flush after flush (a counter of the last interval would
	// fall back to 0).
	prom.waitQuery(t, `min_over_time(statsd_server_keys_rejected_total[4s]) == 2 and max_over_time(statsd_server_keys_rejected_total[4s]) == 2 and count_over_time(statsd_server_keys_rejected_total[4s]) >= 3`,
		func(s []promSample) bool { return len(s) == 1 })
	prom.waitQuery(t, `kafka_consumergroup_lag{consumergroup="billing",topic="orders"}`, func(s []promSample) bool {
		return len(s) == 1 && s[0].value == 7 && s[0].labels["partition"] == "0"
	})
	// No scrape failed: every target is up with no error.
	resp, err := http.Get(prom.url + "/api/v1/targets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets struct {
		Data struct {
			ActiveTargets []struct {
				ScrapePool string
				Health     string
				LastError  string
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	if len(targets.Data.ActiveTargets) != 2 {
		t.Errorf("targets: %+v", targets.Data.ActiveTargets)
	}
	for _, tg := range targets.Data.ActiveTargets {
		if tg.Health != "up" || tg.LastError != "" {
			t.Errorf("target %s: health %s, last error %q", tg.ScrapePool, tg.Health, tg.LastError)
		}
	}
	if t.Failed() {
		t.Logf("prometheus' log:\n%s", prom.log)
	}
}
