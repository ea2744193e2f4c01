package statsd

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

func TestParseConfigFile(t *testing.T) {
	st, err := ParseConfigFile([]byte(`{
		"port": 9125, "address": "127.0.0.1", "flushInterval": 2500, "percentThreshold": [95, -5],
		"deleteIdleStats": true, "deleteGauges": false, "gaugesMaxTTL": 3, "prefixStats": "sd",
		"histogram": [{"metric": "api", "bins": [1, 2.5, "inf"]}],
		"graphiteHost": "127.0.0.1", "graphite": {"legacyNamespace": false, "globalPrefix": "", "globalSuffix": "h1"},
		"backends": ["./backends/graphite", "./backends/console", "./backends/repeater"],
		"repeater": [{"host": "127.0.0.1", "port": 8127}],
		"servers": [{"server": "./servers/udp", "address": "127.0.0.1", "port": 9125}, {"server": "./servers/tcp", "port": 9126}],
		"prometheus": "127.0.0.1:9102", "maxKeys": 1000, "evictIdleFlushes": 2, "mgmt_port": 8126, "mystery": 1
	}`))
	if err != nil {
		t.Fatal(err)
	}
	c := st.Server
	if !reflect.DeepEqual(c.UDP, []string{"127.0.0.1:9125"}) || !reflect.DeepEqual(c.TCP, []string{"0.0.0.0:9126"}) {
		t.Errorf("listeners %v %v", c.UDP, c.TCP)
	}
	if c.FlushInterval != 2500*time.Millisecond || !reflect.DeepEqual(c.PercentThreshold, []float64{95, -5}) {
		t.Errorf("interval %v thresholds %v", c.FlushInterval, c.PercentThreshold)
	}
	if !c.DeleteCounters || !c.DeleteTimers || !c.DeleteSets || c.DeleteGauges || c.GaugesMaxTTL != 3 || c.PrefixStats != "sd" {
		t.Errorf("deletion %+v", c.AggregatorConfig)
	}
	if len(c.Histogram) != 1 || !math.IsInf(c.Histogram[0].Bins[2], 1) || c.MaxKeys != 1000 || c.EvictIdleFlushes != 2 {
		t.Errorf("histogram %+v maxKeys %d evictIdleFlushes %d", c.Histogram, c.MaxKeys, c.EvictIdleFlushes)
	}
	g := st.Graphite
	if g == nil || g.Address != "127.0.0.1:2003" || !g.NoLegacyNamespace || *g.GlobalPrefix != "" || g.GlobalSuffix != "h1" || g.PrefixStats != "sd" {
		t.Errorf("graphite %+v", g)
	}
	if !st.Console || st.Repeater == nil || st.Repeater.Targets[0] != "127.0.0.1:8127" || st.Prometheus.Address != "127.0.0.1:9102" {
		t.Errorf("backends: console %v repeater %+v prometheus %+v", st.Console, st.Repeater, st.Prometheus)
	}
	if !reflect.DeepEqual(st.Ignored, []string{"mgmt_port", "mystery"}) {
		t.Errorf("ignored %v", st.Ignored)
	}
}

func TestParseConfigFileDefaultsAndErrors(t *testing.T) {
	st, err := ParseConfigFile([]byte(`{}`))
	if err != nil || !reflect.DeepEqual(st.Server.UDP, []string{"0.0.0.0:8125"}) || st.Graphite != nil {
		t.Errorf("empty file: %+v, %v", st, err)
	}
	for _, bad := range []string{
		`{`, `{"percentThreshold": "x"}`, `{"backends": ["./backends/nope"]}`,
		`{"servers": [{"server": "./servers/tcp", "socket": "/tmp/s"}]}`,
		`{"histogram": [{"metric": "a", "bins": ["x"]}]}`,
		`{"graphiteHost": "h", "graphiteProtocol": "pickle"}`,
	} {
		if _, err := ParseConfigFile([]byte(bad)); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: err %v", bad, err)
		}
	}
}

func FuzzParseConfigFile(f *testing.F) {
	f.Add([]byte(`{"port": 8125, "percentThreshold": [90, -10], "histogram": [{"metric": "a", "bins": [1, "inf"]}]}`))
	f.Add([]byte(`{"servers": [{"server": "./servers/tcp"}], "backends": ["./backends/repeater"], "repeater": [{"host": "h", "port": 1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseConfigFile(data)
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error %v does not wrap ErrBadConfig", err)
			}
			return
		}
		if len(st.Server.UDP)+len(st.Server.TCP) == 0 {
			t.Fatalf("no listener from %q", data)
		}
	})
}
