package statsd

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/statsd_exporter/pkg/mapper"
	"go.yaml.in/yaml/v2"
)

// Values of PrometheusConfig.Timers.
const (
	TimersHistogram = promHistogram
	TimersSummary   = promSummary
)

// Defaults of PrometheusConfig.
var (
	// DefaultPrometheusBuckets are statsd_exporter's (and the Prometheus
	// client libraries') default histogram buckets, in seconds.
	DefaultPrometheusBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	// DefaultPrometheusQuantiles are statsd_exporter's default summary
	// quantiles.
	DefaultPrometheusQuantiles = []float64{0.5, 0.9, 0.99}
)

// Defaults of PrometheusConfig: LogGap, the least time between two
// logged collisions; IdleTimeout and WriteTimeout, the bounds of a
// scrape connection.
const (
	DefaultPrometheusLogGap       = time.Minute
	DefaultPrometheusIdleTimeout  = 2 * time.Minute
	DefaultPrometheusWriteTimeout = time.Minute
)

// PrometheusConfig configures the Prometheus exposition backend.
type PrometheusConfig struct {
	// Address is where the HTTP server listens, host:port. Required.
	Address string
	// Path of the exposition. Default "/metrics".
	Path string
	// Timers is how timers (ms, h, d) are exposed: TimersHistogram
	// (default), cumulative buckets that histogram_quantile() reads and
	// that add up across instances, or TimersSummary, the quantiles of
	// the last flush interval.
	Timers string
	// Buckets are the histograms' upper bounds, increasing; ms timers
	// are in seconds. Default DefaultPrometheusBuckets.
	Buckets []float64
	// Quantiles of the summaries, in [0, 1]. Default
	// DefaultPrometheusQuantiles.
	Quantiles []float64
	// MappingConfig is a statsd_exporter mapping file (YAML; its
	// --statsd.mapping-config): it names and labels the metrics it
	// matches, and its observer_type, buckets and quantiles win over
	// Timers, Buckets and Quantiles where it sets them.
	MappingConfig string
	// Logger receives collisions, at most one line per LogGap.
	// Default: discard.
	Logger *slog.Logger
	// LogGap is the least time between two logged collisions. Default
	// one minute.
	LogGap time.Duration
	// Now is the clock of the log's rate limit. Default time.Now.
	Now func() time.Time
	// IdleTimeout closes a scrape connection that sends no request for
	// that long, and WriteTimeout one whose response takes longer to
	// write (a client that does not read), so that connections opened
	// and left cannot pile up. Defaults 2 minutes and 1 minute.
	IdleTimeout, WriteTimeout time.Duration
}

// Prometheus serves the latest flush in the Prometheus text format
// (version 0.0.4) over HTTP, named as statsd_exporter names the same
// metrics (see naming), every family with HELP and TYPE lines:
//
//   - counters are cumulative "<name>_total" counters; a value below
//     zero is left out (a Prometheus counter never decreases), as
//     statsd_exporter refuses it, and counted in
//     statsd_server_negative_increments_total (a mapping's scale
//     applies first, as statsd_exporter applies it: through a negative
//     scale the values below zero, scaled, are added and those above
//     zero left out, uncounted); so is an interval's
//     increment that is not a finite number (values summing past
//     ±1.8e308, as "x:1e308|c|@0.1" does), or that would take the
//     counter past it, counted in
//     statsd_server_nonfinite_increments_total: the counter keeps its
//     value, where the other outputs show Etsy's sum (Infinity, or
//     NaN) for that interval only;
//   - gauges are gauges, sets the gauge of the unique members of the
//     last interval;
//   - timers are histograms (or summaries, PrometheusConfig.Timers) in
//     seconds; DogStatsD's h and d values are kept as they are, as
//     statsd_exporter keeps them. A histogram's buckets, _sum and _count
//     are cumulative; a value sent with a sample rate counts 1/rate
//     times (its own rate, when a key comes with several). Like a
//     counter, they stay finite: an interval that would take _sum,
//     _count or a bucket past ±1.8e308 is left out and counted in
//     statsd_server_nonfinite_increments_total. A summary's quantiles are those of the last interval
//     (median and upper_N as Etsy computes them), NaN after an interval
//     with no value, so the series stay; its _sum and _count are
//     cumulative;
//   - the server's own metrics are "statsd_server_*": cumulative
//     "_total" counters of its losses and gauges of what it holds.
//
// A series lives as long as the aggregator flushes its key (see
// AggregatorConfig's Delete* and EvictIdleFlushes).
//
// Every series name is checked against the whole page, the _sum,
// _count and _bucket of histograms and summaries included, so the page
// always parses and no two series are one. Families claim their names in
// order: the server's own first, then by name, and for one name
// counter, gauge, histogram or summary; a family whose name or suffixes
// are claimed already is left out. Within a family, two keys with the
// same labels are merged where nothing is lost (counters and histograms
// with the same buckets add up, as statsd_exporter adds their events);
// otherwise the key that sorts first is kept. What is left out is
// counted in statsd_server_prometheus_series_dropped_total (each flush
// it happens) and logged at most once per LogGap.
type Prometheus struct {
	cfg PrometheusConfig
	ln  net.Listener
	srv *http.Server
	// done carries the HTTP server's end.
	done chan error

	mu   sync.Mutex
	body []byte

	// Touched only by Flush (Render).
	mapper                     *mapper.MetricMapper
	fileBuckets, fileQuantiles bool
	gen                        uint64
	namings                    [numKinds]map[string]*promNaming
	// state holds the cumulative values of the user's series, self
	// those of the server's own counters.
	state   map[string]*promState
	self    map[string]float64
	clients map[string]*clientTotals
	// lastLog is when a collision was last logged; unlogged counts
	// those left out since.
	lastLog  time.Time
	unlogged int
	// nonFinite counts the counter increments left out at this flush
	// because they were not finite.
	nonFinite uint64
}

// clientTotals are the cumulative loss counts of one numbered client.
type clientTotals struct {
	reordered, duplicates, restarts uint64
	gen                             uint64
}

// NewPrometheus starts the HTTP server.
func NewPrometheus(ctx context.Context, cfg PrometheusConfig) (*Prometheus, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := newPrometheus(cfg)
	if cfg.MappingConfig != "" {
		m, fb, fq, err := loadMapping(cfg.MappingConfig, cfg.Logger)
		if err != nil {
			return nil, badConfig("MappingConfig", cfg.MappingConfig, err.Error())
		}
		p.mapper, p.fileBuckets, p.fileQuantiles = m, fb, fq
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, listenError("tcp", cfg.Address, err)
	}
	p.ln = ln
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, p)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: cfg.IdleTimeout, WriteTimeout: cfg.WriteTimeout}
	go func() { p.done <- p.srv.Serve(ln) }()
	return p, nil
}

// newPrometheus returns the backend without its HTTP server (for
// Render alone).
func newPrometheus(cfg PrometheusConfig) *Prometheus {
	p := &Prometheus{cfg: cfg, done: make(chan error, 1), state: make(map[string]*promState),
		self: make(map[string]float64), clients: make(map[string]*clientTotals)}
	for k := range p.namings {
		p.namings[k] = make(map[string]*promNaming)
	}
	return p
}

func (c *PrometheusConfig) setDefaults() {
	if c.Path == "" {
		c.Path = "/metrics"
	}
	if c.Timers == "" {
		c.Timers = TimersHistogram
	}
	if c.Buckets == nil {
		c.Buckets = DefaultPrometheusBuckets
	}
	if c.Quantiles == nil {
		c.Quantiles = DefaultPrometheusQuantiles
	}
	setDefault(&c.LogGap, DefaultPrometheusLogGap)
	setDefault(&c.IdleTimeout, DefaultPrometheusIdleTimeout)
	setDefault(&c.WriteTimeout, DefaultPrometheusWriteTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c *PrometheusConfig) validate() error {
	if err := checkListenAddr("Address", "tcp", c.Address); err != nil {
		return err
	}
	if !strings.HasPrefix(c.Path, "/") {
		return badConfig("Path", c.Path, "must start with /")
	}
	if c.Timers != TimersHistogram && c.Timers != TimersSummary {
		return badConfig("Timers", c.Timers, "must be histogram or summary")
	}
	if err := checkBuckets(c.Buckets); err != nil {
		return badConfig("Buckets", formatFloats(c.Buckets), err.Error())
	}
	for _, q := range c.Quantiles {
		if !(q >= 0 && q <= 1) {
			return badConfig("Quantiles", formatFloats(c.Quantiles), "each must be in [0, 1]")
		}
	}
	if c.LogGap < 0 {
		return badConfig("LogGap", c.LogGap, "must not be negative")
	}
	if c.IdleTimeout < 0 {
		return badConfig("IdleTimeout", c.IdleTimeout, "must not be negative")
	}
	if c.WriteTimeout < 0 {
		return badConfig("WriteTimeout", c.WriteTimeout, "must not be negative")
	}
	if c.MappingConfig != "" {
		if _, _, _, err := loadMapping(c.MappingConfig, slog.New(slog.DiscardHandler)); err != nil {
			return badConfig("MappingConfig", c.MappingConfig, err.Error())
		}
	}
	return nil
}

func checkBuckets(b []float64) error {
	if len(b) == 0 {
		return errors.New("at least one bucket is required")
	}
	for i, v := range b {
		if math.IsNaN(v) || i > 0 && !(v > b[i-1]) {
			return errors.New("must be increasing numbers")
		}
	}
	return nil
}

func formatFloats(fs []float64) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(appendPromFloat(nil, f))
	}
	return strings.Join(s, ",")
}

// loadMapping reads a statsd_exporter mapping file with statsd_exporter's
// own parser, and reports whether the file sets the default buckets and
// quantiles (the parser fills in its defaults, so they are read apart).
func loadMapping(path string, log *slog.Logger) (m *mapper.MetricMapper, fileBuckets, fileQuantiles bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, false, errors.New(strings.TrimPrefix(err.Error(), "open "+path+": "))
	}
	m = &mapper.MetricMapper{Logger: log}
	if err := m.InitFromYAMLString(string(data)); err != nil {
		return nil, false, false, err
	}
	var raw struct {
		Defaults struct {
			Histogram struct {
				Buckets []float64 `yaml:"buckets"`
			} `yaml:"histogram_options"`
			Summary struct {
				Quantiles []any `yaml:"quantiles"`
			} `yaml:"summary_options"`
		} `yaml:"defaults"`
	}
	_ = yaml.Unmarshal(data, &raw)
	if len(raw.Defaults.Histogram.Buckets) > 0 {
		if err := checkBuckets(m.Defaults.HistogramOptions.Buckets); err != nil {
			return nil, false, false, errors.New("defaults.histogram_options.buckets " + err.Error())
		}
	}
	for _, mp := range m.Mappings {
		if o := mp.HistogramOptions; o != nil && len(o.Buckets) > 0 {
			if err := checkBuckets(o.Buckets); err != nil {
				return nil, false, false, errors.New("mapping " + mp.Match + ": histogram_options.buckets " + err.Error())
			}
		}
	}
	return m, len(raw.Defaults.Histogram.Buckets) > 0, len(raw.Defaults.Summary.Quantiles) > 0, nil
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

// appendPromFloat formats a sample value as the text format wants it.
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
