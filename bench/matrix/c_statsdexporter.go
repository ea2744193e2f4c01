package matrix

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/statsd_exporter/pkg/event"
	"github.com/prometheus/statsd_exporter/pkg/exporter"
	"github.com/prometheus/statsd_exporter/pkg/line"
	"github.com/prometheus/statsd_exporter/pkg/listener"
	"github.com/prometheus/statsd_exporter/pkg/mapper"
	"github.com/prometheus/statsd_exporter/pkg/mappercache/lru"
)

// statsdExporter is Prometheus' statsd_exporter (v0.31.0, a Go module
// dependency of bench) run in this process, wired as its main.go wires
// it with its default flags (event queue 10000, flush threshold 1000
// or every 200 ms, UDP packet queue 10000, LRU mapping cache 1000, no
// mapping file, DogStatsD/InfluxDB/Librato/SignalFX tags parsed), its
// UDP socket's receive buffer set to 4 MiB as ours (its
// --statsd.read-buffer). Counted is the counter's value in its registry,
// what a scrape would show.
type statsdExporter struct {
	mu  sync.Mutex
	exp *exporterInstance
}

func (*statsdExporter) Name() string        { return "statsd_exporter" }
func (*statsdExporter) Baseline() string    { return "raw-udp" }
func (*statsdExporter) Peer() string        { return "" }
func (*statsdExporter) Can(o Options) error { return statsdCan(o) }

type exporterInstance struct {
	reg    *prometheus.Registry
	conn   *net.UDPConn
	events chan event.Events
}

func counter(reg *prometheus.Registry, name string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
	reg.MustRegister(c)
	return c
}

func counterVec(reg *prometheus.Registry, name, label string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: name}, []string{label})
	reg.MustRegister(c)
	return c
}

func (c *statsdExporter) start() (*exporterInstance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exp != nil {
		return c.exp, nil
	}
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	parser := line.NewParser()
	parser.EnableDogstatsdParsing()
	parser.EnableInfluxdbParsing()
	parser.EnableLibratoParsing()
	parser.EnableSignalFXParsing()
	eventsFlushed := counter(reg, "statsd_exporter_event_queue_flushed_total")
	events := make(chan event.Events, 10000)
	queue := event.NewEventQueue(events, 1000, 200*time.Millisecond, eventsFlushed)
	m := &mapper.MetricMapper{Registerer: reg, MappingsCount: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mappings", Help: "mappings"}), Logger: logger}
	cache, err := lru.NewMetricMapperLRUCache(reg, 1000)
	if err != nil {
		return nil, err
	}
	m.UseCache(cache)
	metricsCount := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "statsd_exporter_metrics_total", Help: "metrics"}, []string{"type"})
	reg.MustRegister(metricsCount)
	exp := exporter.NewExporter(reg, m, logger,
		counterVec(reg, "statsd_exporter_events_actions_total", "action"),
		counter(reg, "statsd_exporter_events_unmapped_total"),
		counterVec(reg, "statsd_exporter_events_error_total", "reason"),
		counterVec(reg, "statsd_exporter_events_total", "type"),
		counterVec(reg, "statsd_exporter_events_conflict_total", "type"),
		metricsCount)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(udpSocketBuffer)
	ul := &listener.StatsDUDPListener{
		Conn: conn, EventHandler: queue, Logger: logger, LineParser: parser,
		UDPPackets:      counter(reg, "statsd_exporter_udp_packets_total"),
		UDPPacketDrops:  counter(reg, "statsd_exporter_udp_packet_drops_total"),
		LinesReceived:   counter(reg, "statsd_exporter_lines_total"),
		EventsFlushed:   eventsFlushed,
		SampleErrors:    *counterVec(reg, "statsd_exporter_sample_errors_total", "reason"),
		SamplesReceived: counter(reg, "statsd_exporter_samples_total"),
		TagErrors:       counter(reg, "statsd_exporter_tag_errors_total"),
		TagsReceived:    counter(reg, "statsd_exporter_tags_total"),
		UdpPacketQueue:  make(chan []byte, 10000),
	}
	go ul.Listen()
	go exp.Listen(events)
	c.exp = &exporterInstance{reg: reg, conn: conn, events: events}
	return c.exp, nil
}

type exporterLink struct {
	*udpSender
	e   *exporterInstance
	key string
}

func (c *statsdExporter) Open(_ context.Context, o Options) (Link, error) {
	e, err := c.start()
	if err != nil {
		return nil, err
	}
	s, err := newUDPSender(e.conn.LocalAddr().String(), o.Size)
	if err != nil {
		return nil, err
	}
	return &exporterLink{udpSender: s, e: e, key: statsdName(o.Size)}, nil
}

// Counted gathers the registry, as a scrape would, for the counter.
func (l *exporterLink) Counted() (uint64, error) {
	mfs, err := l.e.reg.Gather()
	if err != nil {
		return 0, fmt.Errorf("statsd_exporter: gather: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == l.key {
			var v float64
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
			return uint64(v), nil
		}
	}
	return 0, nil
}

func (l *exporterLink) Close() error { return l.c.Close() }

// Close stops the listener (its packet-queue goroutine, which never
// returns in statsd_exporter, stays parked until the process ends).
func (c *statsdExporter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exp != nil {
		c.exp.conn.Close()
		c.exp = nil
	}
	return nil
}
