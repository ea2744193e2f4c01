package statsd

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PrometheusConfig configures the Prometheus exposition backend.
type PrometheusConfig struct {
	// Address is where the HTTP server listens, host:port. Required.
	Address string
	// Path of the exposition. Default "/metrics".
	Path string
}

// Prometheus serves the latest flush in the Prometheus text format
// (version 0.0.4) over HTTP. A key's tags become labels ("k=v" → k="v",
// a bare tag t → t="true"); names and label names are rewritten to
// Prometheus' character set. Counters are cumulative ("<name>_total"
// adds every flush's count); gauges and sets (unique members over the
// last interval) are gauges; timers are summaries whose quantiles are
// the median and the upper bound of each positive percentThreshold over
// the last interval, and whose _sum and _count are cumulative. The
// server's own metrics are gauges named "statsd_server_*" over the last
// interval, plus cumulative per-client loss counters. Series that would
// collide after rewriting are written once.
type Prometheus struct {
	cfg PrometheusConfig
	ln  net.Listener
	srv *http.Server
	// done carries the HTTP server's end.
	done chan error

	mu   sync.Mutex
	body []byte

	// Cumulative state, touched only by Flush.
	counters map[string]float64
	timers   map[string][2]float64 // sum, count
	clients  map[string][2]float64 // received, lost
}

// NewPrometheus starts the HTTP server.
func NewPrometheus(ctx context.Context, cfg PrometheusConfig) (*Prometheus, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, listenError("tcp", cfg.Address, err)
	}
	p := &Prometheus{cfg: cfg, ln: ln, done: make(chan error, 1),
		counters: make(map[string]float64), timers: make(map[string][2]float64), clients: make(map[string][2]float64)}
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, p)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { p.done <- p.srv.Serve(ln) }()
	return p, nil
}

func (c *PrometheusConfig) setDefaults() {
	if c.Path == "" {
		c.Path = "/metrics"
	}
}

func (c *PrometheusConfig) validate() error {
	if err := checkListenAddr("Address", "tcp", c.Address); err != nil {
		return err
	}
	if !strings.HasPrefix(c.Path, "/") {
		return badConfig("Path", c.Path, "must start with /")
	}
	return nil
}

// Addr is where the HTTP server listens.
func (p *Prometheus) Addr() net.Addr { return p.ln.Addr() }

// Name is "prometheus".
func (p *Prometheus) Name() string { return "prometheus" }

// ServeHTTP writes the latest flush.
func (p *Prometheus) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	body := p.body
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(body)
}

// Flush renders the snapshot; scrapes get it from then on.
func (p *Prometheus) Flush(_ context.Context, s *Snapshot) error {
	body := p.Render(s)
	p.mu.Lock()
	p.body = body
	p.mu.Unlock()
	return nil
}

// Close stops the HTTP server.
func (p *Prometheus) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if serr := <-p.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// family is one metric family being rendered.
type family struct {
	typ    string
	series map[string]bool // name{labels} written
	lines  []byte
}

type promWriter struct {
	families map[string]*family
}

// add writes one sample of family fam (a sample name may add a suffix
// such as _sum) unless that series exists already.
func (w *promWriter) add(fam, typ, sample, labels string, v float64) {
	f := w.families[fam]
	if f == nil {
		f = &family{typ: typ, series: make(map[string]bool)}
		w.families[fam] = f
	} else if f.typ != typ {
		return // the name is taken by another type
	}
	id := sample + "{" + labels + "}"
	if f.series[id] {
		return
	}
	f.series[id] = true
	f.lines = append(f.lines, sample...)
	if labels != "" {
		f.lines = append(f.lines, '{')
		f.lines = append(f.lines, labels...)
		f.lines = append(f.lines, '}')
	}
	f.lines = append(f.lines, ' ')
	f.lines = appendPromFloat(f.lines, v)
	f.lines = append(f.lines, '\n')
}

// Render returns the exposition of s and updates the cumulative values.
func (p *Prometheus) Render(s *Snapshot) []byte {
	w := &promWriter{families: make(map[string]*family)}
	seen := make(map[string]bool, len(s.Counters))
	for _, c := range s.Counters {
		p.counters[c.Key] += c.Count
		seen[c.Key] = true
		name, labels := promKey(c.Key)
		w.add(name+"_total", "counter", name+"_total", labels, p.counters[c.Key])
	}
	forgetMissing(p.counters, seen)
	clear(seen)
	for _, g := range s.Gauges {
		name, labels := promKey(g.Key)
		w.add(name, "gauge", name, labels, g.Value)
	}
	for _, st := range s.Sets {
		name, labels := promKey(st.Key)
		w.add(name, "gauge", name, labels, float64(st.Count))
	}
	seenTimers := make(map[string]bool, len(s.Timers))
	for _, t := range s.Timers {
		seenTimers[t.Key] = true
		name, labels := promKey(t.Key)
		p.renderTimer(w, name, labels, t)
	}
	for k := range p.timers {
		if !seenTimers[k] {
			delete(p.timers, k)
		}
	}
	for _, st := range s.SelfStats() {
		if strings.HasPrefix(st.Name, "server.clients.") {
			continue
		}
		name := promName("statsd_" + st.Name)
		w.add(name, "gauge", name, "", st.Value)
	}
	for _, c := range s.Server.Clients {
		labels := `client="` + promLabelValue(c.ID) + `"`
		w.add("statsd_server_client_packets_received_total", "counter", "statsd_server_client_packets_received_total", labels, float64(c.TotalReceived))
		w.add("statsd_server_client_packets_lost_total", "counter", "statsd_server_client_packets_lost_total", labels, float64(c.TotalLost))
	}
	names := make([]string, 0, len(w.families))
	for n := range w.families {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		f := w.families[n]
		out = append(out, "# TYPE "...)
		out = append(out, n...)
		out = append(out, ' ')
		out = append(out, f.typ...)
		out = append(out, '\n')
		out = append(out, f.lines...)
	}
	return out
}

func forgetMissing(m map[string]float64, seen map[string]bool) {
	for k := range m {
		if !seen[k] {
			delete(m, k)
		}
	}
}

// renderTimer writes a timer as a summary.
func (p *Prometheus) renderTimer(w *promWriter, name, labels string, t TimerValue) {
	var count, sum float64
	var quantiles []Stat
	for _, st := range t.Stats {
		switch {
		case st.Name == "count":
			count = st.Value
		case st.Name == "sum":
			sum = st.Value
		case st.Name == "median":
			quantiles = append(quantiles, Stat{"0.5", st.Value})
		case strings.HasPrefix(st.Name, "upper_"):
			q, err := strconv.ParseFloat(strings.Replace(st.Name[len("upper_"):], "_", ".", 1), 64)
			if err == nil && q < 100 {
				quantiles = append(quantiles, Stat{strconv.FormatFloat(q/100, 'g', -1, 64), st.Value})
			}
		}
	}
	acc := p.timers[t.Key]
	acc[0] += sum
	acc[1] += count
	p.timers[t.Key] = acc
	sep := ""
	if labels != "" {
		sep = ","
	}
	for _, q := range quantiles {
		w.add(name, "summary", name, labels+sep+`quantile="`+q.Name+`"`, q.Value)
	}
	w.add(name, "summary", name+"_sum", labels, acc[0])
	w.add(name, "summary", name+"_count", labels, acc[1])
}

// promKey splits a key into a metric name and its labels.
func promKey(key string) (name, labels string) {
	parts := strings.Split(key, ";")
	name = promName(parts[0])
	if len(parts) == 1 {
		return name, ""
	}
	var b strings.Builder
	used := make(map[string]bool, len(parts))
	for _, tag := range parts[1:] {
		k, v, ok := strings.Cut(tag, "=")
		if !ok {
			v = "true"
		}
		k = promName(k)
		if strings.HasPrefix(k, "__") || k == "quantile" {
			k = "tag" + k
		}
		if used[k] {
			continue
		}
		used[k] = true
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(promLabelValue(v))
		b.WriteByte('"')
	}
	return name, b.String()
}

// promName rewrites s to [a-zA-Z_][a-zA-Z0-9_]*.
func promName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

func promLabelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func appendPromFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
