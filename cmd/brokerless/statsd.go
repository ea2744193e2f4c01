package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/brokerless/brokerless/statsd"
	"github.com/brokerless/brokerless/transport"
	"github.com/spf13/pflag"
)

var statsdCmd = command{
	name:     "statsd",
	summary:  "a StatsD server: Etsy statsd's output, DogStatsD's input, its own loss counted",
	synopsis: "[--udp ADDR] [--tcp ADDR] [--flush-interval 10s] [--graphite ADDR] [--prometheus ADDR] [--kafka URL] [--config FILE] [flags]",
	about: `
Receives StatsD metrics over UDP, TCP and unix datagram sockets and
flushes them every --flush-interval, computed exactly as Etsy statsd
0.9.0 computes them: counters (stats.<key> per second and
stats_counts.<key>), gauges with +/- deltas, timers with percentiles,
sets. DogStatsD's tags, packed values, h and d types are accepted; tags
become part of the key (Graphite tags, Prometheus labels).

Backends: --graphite writes Graphite plaintext with Etsy's key layout, so
existing dashboards keep working (tags as carbon accepts them: a bare tag
is flag=true); --prometheus serves /metrics, named as statsd_exporter
names the same metrics, timers in seconds as histograms (--prometheus-timers
summary for summaries), --mapping-config FILE reading statsd_exporter's
mapping files; --console
prints JSON lines (the metrics received; --console-self-metrics adds the
server's own; while stdout is blocked, one flush waits and later ones are
dropped, counted in stats.statsd.server.backend_lines_lost.console);
--kafka writes the same JSON lines to a logd or Kafka
topic, one record a metric keyed by the metric's key, so the metrics are
durable and any Kafka client can replay them (a flush the topic has not
accepted within 5 s counts as the backend's error,
stats.statsd.server.backend_errors.kafka, and each line that never
reaches the topic in stats.statsd.server.backend_lines_lost.kafka);
--repeat forwards every packet to another StatsD.

Every flush also reports the server itself, as stats.statsd.server.*:
kernel receive drops on its UDP sockets, keys held, rejected (--max-keys)
and evicted (--evict-idle-flushes), flush duration, and, for clients that
number their packets, the packets each lost.

--config FILE reads a JSON file with the options below, Etsy statsd's
names first, then ours; flags override them. Etsy options this server
does not use ("ignored") and unknown names are accepted and named in a
warning. Without listener flags or file the server listens on UDP :8125,
as Etsy's does.
  Etsy's:  port, address, address_ipv6, servers (server, address, port,
           address_ipv6, socket), flushInterval, percentThreshold,
           deleteIdleStats, deleteCounters, deleteGauges, deleteTimers,
           deleteSets, gaugesMaxTTL, prefixStats, keyNameSanitize,
           calculatedTimerMetrics, histogram (metric, bins), flush_counts,
           graphiteHost, graphitePort, graphiteProtocol, graphite
           (legacyNamespace, globalPrefix, prefixCounter, prefixTimer,
           prefixGauge, prefixSet, globalSuffix), backends, repeater
           (host, port), repeaterProtocol
  ours:    prometheus, unixgram, udpReaders, maxKeys, evictIdleFlushes,
           maxTimerSamples, maxSetMembers, maxClients, recvBuffer
  ignored: mgmt_address, mgmt_port, title, healthStatus, dumpMessages,
           debug, log, keyFlush, automaticConfigReload, console,
           graphitePicklePort

SIGINT or SIGTERM makes a final flush and exits.`,
	examples: `
# Listen on 127.0.0.1:8125 over UDP and TCP, flush to Carbon every 10 s
# and serve Prometheus' /metrics.
brokerless statsd --udp 127.0.0.1:8125 --tcp 127.0.0.1:8125 --flush-interval 10s \
    --graphite 127.0.0.1:2003 --prometheus 127.0.0.1:9102

# Drop-in for an Etsy statsd: the same settings, as JSON.
brokerless statsd --config /etc/statsd/config.json

# Watch what arrives: a JSON line per metric every second.
brokerless statsd --udp 127.0.0.1:8125 --flush-interval 1s --console

# Keep every flush in a logd topic, and read it back with any Kafka client.
brokerless logd --dir /tmp/logd &
brokerless statsd --udp 127.0.0.1:8125 --kafka logd://127.0.0.1:9092/metrics
kcat -C -b 127.0.0.1:9092 -t metrics -f '%k %s\n'`,
	run: runStatsd,
}

type statsdOptions struct {
	config        string
	udp, tcp      []string
	unixgram      []string
	flushInterval time.Duration
	graphite      string
	prometheus    string
	promTimers    string
	promBuckets   []float64
	mappingConfig string
	console       bool
	consoleSelf   bool
	kafka         string
	repeat        []string
	maxKeys       int
	evictIdle     int
	tcpIdle       time.Duration
}

func (o *statsdOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.config, "config", "", "JSON file with Etsy statsd's option names")
	fs.StringArrayVar(&o.udp, "udp", nil, "listen for UDP on host:port (repeatable)")
	fs.StringArrayVar(&o.tcp, "tcp", nil, "listen for newline-delimited TCP on host:port (repeatable)")
	fs.DurationVar(&o.tcpIdle, "tcp-idle-timeout", 0, "close a TCP connection silent this long (0: never; at 1024 connections the one idle the longest is closed for a new one anyway)")
	fs.StringArrayVar(&o.unixgram, "unixgram", nil, "listen on a unix datagram socket at this path (repeatable)")
	fs.DurationVar(&o.flushInterval, "flush-interval", statsd.DefaultFlushInterval, "time between two flushes")
	fs.StringVar(&o.graphite, "graphite", "", "flush to Carbon's plaintext listener at host:port")
	fs.StringVar(&o.prometheus, "prometheus", "", "serve Prometheus' /metrics on host:port")
	fs.StringVar(&o.promTimers, "prometheus-timers", statsd.TimersHistogram, "timers on Prometheus: histogram or summary")
	fs.Float64SliceVar(&o.promBuckets, "prometheus-buckets", statsd.DefaultPrometheusBuckets, "histogram buckets, in seconds for ms timers (comma-separated, increasing)")
	fs.StringVar(&o.mappingConfig, "mapping-config", "", "statsd_exporter mapping file (YAML) naming and labelling the metrics on Prometheus")
	fs.BoolVar(&o.console, "console", false, "print every flush on standard output as JSON lines")
	fs.BoolVar(&o.consoleSelf, "console-self-metrics", false, "with --console, also print the server's own metrics (statsd.*, about 25 lines a flush)")
	fs.StringVar(&o.kafka, "kafka", "", "write every flush to a log topic as JSON lines, one record a metric: logd://HOST:PORT/TOPIC or kafka://…")
	fs.StringArrayVar(&o.repeat, "repeat", nil, "forward every packet over UDP to the StatsD at host:port (repeatable)")
	fs.IntVar(&o.maxKeys, "max-keys", statsd.DefaultMaxKeys, "most keys held; values for more are dropped and counted")
	fs.IntVar(&o.evictIdle, "evict-idle-flushes", statsd.DefaultEvictIdleFlushes, "at the --max-keys cap, forget the keys idle for this many flushes (-1: never)")
}

func runStatsd(ctx context.Context, inv *invocation) error {
	var o statsdOptions
	fs := inv.flags()
	o.register(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	st, err := o.settings(fs.Changed, inv.err)
	if err != nil {
		return err
	}
	if err := st.Validate(); err != nil {
		return configError(err, statsdFlagOf)
	}
	var kafkaEP transport.Endpoint
	if o.kafka != "" {
		if kafkaEP, err = statsdLog(o.kafka, inv.log); err != nil {
			return err
		}
	}
	st.Server.Logger = inv.log
	backends, err := buildStatsdBackends(ctx, st, inv)
	if err != nil {
		return err
	}
	if kafkaEP != nil {
		pub, err := kafkaEP.Publisher(ctx)
		if err != nil {
			closeStatsdBackends(backends)
			return fmt.Errorf("--kafka %s: %w", o.kafka, err)
		}
		l, err := statsd.NewLog(statsd.LogConfig{Publisher: pub, Name: "kafka"})
		if err != nil {
			pub.Close()
			closeStatsdBackends(backends)
			return err
		}
		backends = append(backends, l)
	}
	st.Server.Backends = backends
	srv, err := statsd.NewServer(ctx, st.Server)
	if err != nil {
		closeStatsdBackends(backends)
		return o.listenError(err, fs.Changed)
	}
	writeStatsdListening(inv.err, srv, o.kafka)
	if err := srv.Serve(ctx); err != nil {
		return err
	}
	fmt.Fprintln(inv.err, "statsd: final flush done")
	return nil
}

// statsdFlagOf names the flag of each Config field (as statsd's
// ConfigError spells it) that a flag sets.
var statsdFlagOf = map[string]string{
	"UDP": "udp", "TCP": "tcp", "Unixgram": "unixgram", "FlushInterval": "flush-interval",
	"MaxKeys": "max-keys", "EvictIdleFlushes": "evict-idle-flushes", "IdleTimeout": "tcp-idle-timeout",
	"Graphite.Address": "graphite", "Prometheus.Address": "prometheus", "Repeater.Targets": "repeat",
	"Prometheus.Timers": "prometheus-timers", "Prometheus.Buckets": "prometheus-buckets", "Prometheus.MappingConfig": "mapping-config",
}

// listenFailure is an address statsd could not listen on
// (statsd.ListenError, statsd.AddrInUseError).
type listenFailure interface {
	ListenFailure() (network, addr, reason string)
}

// listenError names the flag (or the config file) that gave the address
// a listener failed on; other errors lose their "statsd: " prefix.
func (o *statsdOptions) listenError(err error, changed func(string) bool) error {
	var lf listenFailure
	if !errors.As(err, &lf) {
		return configError(trimStatsd(err), statsdFlagOf)
	}
	network, addr, reason := lf.ListenFailure()
	if o.config != "" && !changed("udp") && !changed("tcp") && !changed("unixgram") {
		return fmt.Errorf("--config %s: %s %s: %s", o.config, network, addr, reason)
	}
	return fmt.Errorf("--%s %s: %s", network, addr, reason)
}

// trimStatsd drops the "statsd: " that starts the statsd package's
// messages: the command's name already says it.
func trimStatsd(err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), "statsd: "); ok {
		return &trimmedError{msg, err}
	}
	return err
}

type trimmedError struct {
	msg string
	err error
}

func (e *trimmedError) Error() string { return e.msg }
func (e *trimmedError) Unwrap() error { return e.err }

// settings reads the config file, if any, and lets the flags override
// it.
func (o *statsdOptions) settings(changed func(string) bool, warn io.Writer) (*statsd.Settings, error) {
	st := &statsd.Settings{}
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return nil, usagef("--config: %v", err)
		}
		if st, err = statsd.ParseConfigFile(data); err != nil {
			var ce *statsd.ConfigError
			if errors.As(err, &ce) {
				return nil, usagef("--config %s: option %s %v: %s", o.config, ce.Field, ce.Value, ce.Want)
			}
			return nil, usagef("--config %s: %s", o.config, strings.TrimPrefix(err.Error(), "statsd: bad config: "))
		}
		if len(st.Ignored) > 0 {
			fmt.Fprintf(warn, "statsd: ignoring options of %s: %s\n", o.config, strings.Join(st.Ignored, ", "))
		}
	}
	c := &st.Server
	if changed("udp") || changed("tcp") || changed("unixgram") {
		c.UDP, c.TCP, c.Unixgram = o.udp, o.tcp, o.unixgram
	} else if o.config == "" {
		c.UDP = []string{fmt.Sprintf(":%d", statsd.DefaultPort)}
	}
	if changed("flush-interval") || o.config == "" {
		if o.flushInterval < time.Millisecond {
			return nil, usagef("--flush-interval %v: must be at least 1ms, e.g. 10s", o.flushInterval)
		}
		c.FlushInterval = o.flushInterval
	}
	if changed("max-keys") || o.config == "" {
		if o.maxKeys < 1 {
			return nil, usagef("--max-keys %d: must be positive", o.maxKeys)
		}
		c.MaxKeys = o.maxKeys
	}
	if changed("evict-idle-flushes") || o.config == "" {
		if o.evictIdle < -1 || o.evictIdle == 0 {
			return nil, usagef("--evict-idle-flushes %d: must be -1 (never) or positive", o.evictIdle)
		}
		c.EvictIdleFlushes = o.evictIdle
	}
	if changed("tcp-idle-timeout") {
		if o.tcpIdle < 0 {
			return nil, usagef("--tcp-idle-timeout %v: must not be negative (0: never)", o.tcpIdle)
		}
		c.IdleTimeout = o.tcpIdle
	}
	if o.graphite != "" {
		if st.Graphite == nil {
			st.Graphite = &statsd.GraphiteConfig{PrefixStats: c.PrefixStats, Sanitize: c.NoSanitize, Self: true}
		}
		st.Graphite.Address = o.graphite
	}
	if o.prometheus != "" {
		st.Prometheus = &statsd.PrometheusConfig{Address: o.prometheus}
	}
	if st.Prometheus != nil {
		st.Prometheus.Timers, st.Prometheus.Buckets, st.Prometheus.MappingConfig = o.promTimers, o.promBuckets, o.mappingConfig
	} else {
		for _, f := range []string{"prometheus-timers", "prometheus-buckets", "mapping-config"} {
			if changed(f) {
				return nil, usagef("--%s: there is no Prometheus backend (give --prometheus)", f)
			}
		}
	}
	st.Console = st.Console || o.console
	if o.consoleSelf && !st.Console {
		return nil, usagef("--console-self-metrics: there is no console (give --console)")
	}
	st.ConsoleSelf = o.consoleSelf
	if len(o.repeat) > 0 {
		st.Repeater = &statsd.RepeaterConfig{Targets: o.repeat}
	}
	return st, nil
}

func buildStatsdBackends(ctx context.Context, st *statsd.Settings, inv *invocation) ([]statsd.Backend, error) {
	var bs []statsd.Backend
	fail := func(err error) ([]statsd.Backend, error) {
		closeStatsdBackends(bs)
		var lf listenFailure
		if errors.As(err, &lf) { // only the Prometheus backend listens
			_, addr, reason := lf.ListenFailure()
			return nil, fmt.Errorf("--prometheus %s: %s", addr, reason)
		}
		return nil, configError(trimStatsd(err), statsdFlagOf)
	}
	if st.Graphite != nil {
		g, err := statsd.NewGraphite(*st.Graphite)
		if err != nil {
			return fail(err)
		}
		bs = append(bs, g)
	}
	if st.Prometheus != nil {
		st.Prometheus.Logger = inv.log
		p, err := statsd.NewPrometheus(ctx, *st.Prometheus)
		if err != nil {
			return fail(err)
		}
		bs = append(bs, p)
	}
	if st.Console {
		bs = append(bs, statsd.NewConsole(inv.out, statsd.ConsoleConfig{Self: st.ConsoleSelf}))
	}
	if st.Repeater != nil {
		st.Repeater.Logger = inv.log
		r, err := statsd.NewRepeater(ctx, *st.Repeater)
		if err != nil {
			return fail(err)
		}
		bs = append(bs, r)
	}
	return bs, nil
}

func closeStatsdBackends(bs []statsd.Backend) {
	for _, b := range bs {
		if c, ok := b.(statsd.Closer); ok {
			_ = c.Close()
		}
	}
}

// writeStatsdListening says where the server listens and flushes.
func writeStatsdListening(w io.Writer, srv *statsd.Server, kafkaURL string) {
	cfg := srv.Config()
	var parts []string
	for _, a := range srv.UDPAddrs() {
		parts = append(parts, fmt.Sprintf("udp %v (%d readers)", a, cfg.UDPReaders))
	}
	for _, a := range srv.TCPAddrs() {
		parts = append(parts, fmt.Sprintf("tcp %v", a))
	}
	for _, p := range srv.UnixgramPaths() {
		parts = append(parts, "unixgram "+p)
	}
	fmt.Fprintf(w, "statsd: listening on %s\n", strings.Join(parts, ", "))
	var to []string
	for _, b := range cfg.Backends {
		switch b := b.(type) {
		case *statsd.Prometheus:
			to = append(to, fmt.Sprintf("prometheus http://%v/metrics", b.Addr()))
		case *statsd.Graphite:
			to = append(to, "graphite "+b.Address())
		case *statsd.Log:
			to = append(to, "kafka "+kafkaURL)
		default:
			to = append(to, b.Name())
		}
	}
	if len(to) == 0 {
		to = []string{"no backend (metrics are aggregated, then discarded)"}
	}
	fmt.Fprintf(w, "statsd: flushing every %v to %s\n", cfg.FlushInterval, strings.Join(to, ", "))
}

// statsdLog checks that raw is a log topic --kafka can write flushes to,
// before anything starts; its client logs to log.
func statsdLog(raw string, log *slog.Logger) (transport.Endpoint, error) {
	ep, err := transport.Open(context.Background(), raw, transport.WithLogger(log))
	if err != nil {
		return nil, &oneLineError{fmt.Errorf("--kafka: %w", urlError(raw, err))}
	}
	if _, ok := ep.(transport.TailReader); !ok {
		return nil, &oneLineError{fmt.Errorf("--kafka %s: not a log (flushes go to a logd:// or kafka:// topic)", raw)}
	}
	return ep, nil
}
