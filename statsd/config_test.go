package statsd

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every bad value of the server's and the backends' configuration is a
// ConfigError naming the field and the value, found by Settings.Validate
// before anything opens, and by the constructors too.
func TestConfigErrorsNameTheField(t *testing.T) {
	ok := func() Settings {
		return Settings{Server: Config{UDP: []string{"127.0.0.1:0"}, TCP: []string{"127.0.0.1:0"}}}
	}
	cases := []struct {
		name  string
		edit  func(st *Settings)
		field string
		value any
	}{
		{"udp port", func(st *Settings) { st.Server.UDP = []string{"127.0.0.1:99999"} }, "UDP", "127.0.0.1:99999"},
		{"udp no port", func(st *Settings) { st.Server.UDP = []string{"127.0.0.1"} }, "UDP", "127.0.0.1"},
		{"tcp", func(st *Settings) { st.Server.TCP = []string{"nonsense"} }, "TCP", "nonsense"},
		{"unixgram", func(st *Settings) { st.Server.Unixgram = []string{"/" + strings.Repeat("x", 200)} }, "Unixgram", "/" + strings.Repeat("x", 200)},
		{"nothing", func(st *Settings) { st.Server.UDP, st.Server.TCP = nil, nil }, "UDP", "(none)"},
		{"readers", func(st *Settings) { st.Server.UDPReaders = 65 }, "UDPReaders", 65},
		{"recv buffer", func(st *Settings) { st.Server.RecvBuffer = -2 }, "RecvBuffer", -2},
		{"idle timeout", func(st *Settings) { st.Server.IdleTimeout = -time.Second }, "IdleTimeout", -time.Second},
		{"flush interval", func(st *Settings) { st.Server.FlushInterval = time.Microsecond }, "FlushInterval", time.Microsecond},
		{"max keys", func(st *Settings) { st.Server.MaxKeys = -1 }, "MaxKeys", -1},
		{"evict", func(st *Settings) { st.Server.EvictIdleFlushes = -2 }, "EvictIdleFlushes", -2},
		{"percentile", func(st *Settings) { st.Server.PercentThreshold = []float64{90, 101} }, "PercentThreshold", 101.0},
		{"histogram", func(st *Settings) {
			st.Server.Histogram = []HistogramConfig{{Metric: "h", Bins: []float64{2, 1, math.Inf(1)}}}
		}, "Histogram", "h"},
		{"graphite", func(st *Settings) { st.Graphite = &GraphiteConfig{Address: "nonsense"} }, "Graphite.Address", "nonsense"},
		{"graphite no host", func(st *Settings) { st.Graphite = &GraphiteConfig{Address: ":2003"} }, "Graphite.Address", ":2003"},
		{"graphite port 0", func(st *Settings) { st.Graphite = &GraphiteConfig{Address: "h:0"} }, "Graphite.Address", "h:0"},
		{"prometheus", func(st *Settings) { st.Prometheus = &PrometheusConfig{Address: "127.0.0.1:99999"} }, "Prometheus.Address", "127.0.0.1:99999"},
		{"prometheus path", func(st *Settings) { st.Prometheus = &PrometheusConfig{Address: ":0", Path: "m"} }, "Prometheus.Path", "m"},
		{"repeat", func(st *Settings) { st.Repeater = &RepeaterConfig{Targets: []string{"h:1", "x"}} }, "Repeater.Targets", "x"},
		{"repeat none", func(st *Settings) { st.Repeater = &RepeaterConfig{} }, "Repeater.Targets", "(none)"},
		{"repeat protocol", func(st *Settings) { st.Repeater = &RepeaterConfig{Targets: []string{"h:1"}, Protocol: "sctp"} }, "Repeater.Protocol", "sctp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := ok()
			if err := st.Validate(); err != nil {
				t.Fatalf("valid settings: %v", err)
			}
			tc.edit(&st)
			err := st.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrBadConfig) {
				t.Fatalf("Validate: %v (%T), want a ConfigError", err, err)
			}
			if ce.Field != tc.field || ce.Value != tc.value || ce.Want == "" {
				t.Fatalf("Validate: %#v, want field %s value %v", ce, tc.field, tc.value)
			}
			// The constructor says the same, with the backend's own field
			// name.
			ctx := context.Background()
			var cerr error
			switch backend, field, _ := strings.Cut(tc.field, "."); backend {
			case "Graphite":
				_, cerr = NewGraphite(*st.Graphite)
				tc.field = field
			case "Prometheus":
				_, cerr = NewPrometheus(ctx, *st.Prometheus)
				tc.field = field
			case "Repeater":
				_, cerr = NewRepeater(ctx, *st.Repeater)
				tc.field = field
			default:
				_, cerr = NewServer(ctx, st.Server)
			}
			if !errors.As(cerr, &ce) || ce.Field != tc.field || ce.Value != tc.value {
				t.Fatalf("constructor: %v, want a ConfigError for %s %v", cerr, tc.field, tc.value)
			}
		})
	}
}

// A configuration file's bad value is reported with the file's option
// name.
func TestParseConfigFileErrorsNameTheOption(t *testing.T) {
	for _, tc := range []struct{ file, option string }{
		{`{"udpReaders": 100}`, "udpReaders"},
		{`{"port": 99999}`, "port/address/servers"},
		{`{"flushInterval": 0.5}`, "flushInterval"},
		{`{"maxKeys": -1}`, "maxKeys"},
		{`{"evictIdleFlushes": -5}`, "evictIdleFlushes"},
		{`{"graphiteHost": "h", "graphitePort": 99999}`, "graphiteHost/graphitePort"},
		{`{"prometheus": "nonsense"}`, "prometheus"},
		{`{"backends": ["./backends/repeater"], "repeater": [{"host": "", "port": 1}]}`, "repeater"},
		{`{"backends": ["./backends/nope"]}`, "backends"},
		{`{"servers": [{"server": "./servers/sctp"}]}`, "servers"},
		{`{"percentThreshold": "x"}`, "percentThreshold"},
		{`{"graphiteHost": "h", "graphiteProtocol": "pickle"}`, "graphiteProtocol"},
	} {
		_, err := ParseConfigFile([]byte(tc.file))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.option {
			t.Errorf("%s: %v, want a ConfigError for option %s", tc.file, err, tc.option)
		}
	}
}

// A listener that cannot open says which address once, and why, without
// net's own "listen <network> <address>:" repeated.
func TestListenErrorSaysItOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "statsd.sock")
	_, err := NewServer(context.Background(), Config{Unixgram: []string{path}})
	var le *ListenError
	if !errors.As(err, &le) || le.Network != "unixgram" || le.Addr != path {
		t.Fatalf("%v (%T), want a ListenError for %s", err, err, path)
	}
	if msg := err.Error(); strings.Count(msg, path) != 1 || strings.Count(msg, "listen") != 1 {
		t.Fatalf("message %q names the address or says listen more than once", msg)
	}
}
