package statsd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings is what a configuration file asks for: the server and the
// backends to build.
type Settings struct {
	Server     Config
	Graphite   *GraphiteConfig
	Repeater   *RepeaterConfig
	Prometheus *PrometheusConfig
	Console    bool
	// ConsoleSelf adds the server's own metrics to the console
	// (ConsoleConfig.Self).
	ConsoleSelf bool
	// Ignored lists the options of the file that this server does not
	// use (Etsy options such as mgmt_port, and unknown names).
	Ignored []string
}

// fileConfig is Etsy statsd's configuration object, read from JSON, with
// a few options of ours (marked).
type fileConfig struct {
	Port        *int   `json:"port"`
	Address     string `json:"address"`
	AddressIPv6 bool   `json:"address_ipv6"`
	Servers     []struct {
		Server      string `json:"server"`
		Address     string `json:"address"`
		Port        *int   `json:"port"`
		AddressIPv6 bool   `json:"address_ipv6"`
		Socket      string `json:"socket"`
	} `json:"servers"`
	FlushInterval          *float64        `json:"flushInterval"`
	PercentThreshold       json.RawMessage `json:"percentThreshold"`
	DeleteIdleStats        *bool           `json:"deleteIdleStats"`
	DeleteCounters         *bool           `json:"deleteCounters"`
	DeleteTimers           *bool           `json:"deleteTimers"`
	DeleteGauges           *bool           `json:"deleteGauges"`
	DeleteSets             *bool           `json:"deleteSets"`
	GaugesMaxTTL           *int            `json:"gaugesMaxTTL"`
	PrefixStats            *string         `json:"prefixStats"`
	KeyNameSanitize        *bool           `json:"keyNameSanitize"`
	CalculatedTimerMetrics []string        `json:"calculatedTimerMetrics"`
	Histogram              []struct {
		Metric string            `json:"metric"`
		Bins   []json.RawMessage `json:"bins"`
	} `json:"histogram"`
	FlushCounts      *bool   `json:"flush_counts"`
	GraphiteHost     string  `json:"graphiteHost"`
	GraphitePort     *int    `json:"graphitePort"`
	GraphiteProtocol *string `json:"graphiteProtocol"`
	Graphite         struct {
		LegacyNamespace *bool   `json:"legacyNamespace"`
		GlobalPrefix    *string `json:"globalPrefix"`
		PrefixCounter   *string `json:"prefixCounter"`
		PrefixTimer     *string `json:"prefixTimer"`
		PrefixGauge     *string `json:"prefixGauge"`
		PrefixSet       *string `json:"prefixSet"`
		GlobalSuffix    *string `json:"globalSuffix"`
	} `json:"graphite"`
	Backends []string `json:"backends"`
	Repeater []struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"repeater"`
	RepeaterProtocol string `json:"repeaterProtocol"`

	// Ours.
	Prometheus       string   `json:"prometheus"`
	Unixgram         []string `json:"unixgram"`
	UDPReaders       int      `json:"udpReaders"`
	MaxKeys          int      `json:"maxKeys"`
	EvictIdleFlushes int      `json:"evictIdleFlushes"`
	MaxTimerSamples  int      `json:"maxTimerSamples"`
	MaxSetMembers    int      `json:"maxSetMembers"`
	MaxClients       int      `json:"maxClients"`
	RecvBuffer       int      `json:"recvBuffer"`
}

// fileConfigType lists the option names ParseConfigFile reads.
var fileConfigType = reflect.TypeFor[fileConfig]()

// knownIgnored are Etsy options that configure what this server does not
// have (its management console, logging, process title, key logging).
var knownIgnored = []string{"mgmt_address", "mgmt_port", "title", "healthStatus", "dumpMessages", "debug",
	"log", "keyFlush", "automaticConfigReload", "console", "graphitePicklePort"}

// ParseConfigFile reads a configuration file: a JSON object with Etsy
// statsd's option names (its exampleConfig.js documents them), plus
// "prometheus" (host:port of the /metrics endpoint), "unixgram" (socket
// paths), "udpReaders", "maxKeys", "evictIdleFlushes", "maxTimerSamples", "maxSetMembers",
// "maxClients" and "recvBuffer". Etsy's files are JavaScript: quote the
// names and drop comments and trailing commas to make them JSON.
func ParseConfigFile(data []byte) (*Settings, error) {
	var f fileConfig
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrBadConfig, err)
	}
	var names map[string]json.RawMessage
	_ = json.Unmarshal(data, &names)
	st := &Settings{}
	for name := range names {
		if !knownOption(name) {
			st.Ignored = append(st.Ignored, name)
		}
	}
	sort.Strings(st.Ignored)
	if err := f.apply(st); err != nil {
		return nil, err
	}
	if err := st.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			if option, ok := fileOptionOf[ce.Field]; ok {
				return nil, badConfig(option, ce.Value, ce.Want)
			}
		}
		return nil, err
	}
	return st, nil
}

// fileOptionOf names the file option of each field Validate may find at
// fault.
var fileOptionOf = map[string]string{
	"UDP": "port/address/servers", "TCP": "servers", "Unixgram": "unixgram", "UDPReaders": "udpReaders", "RecvBuffer": "recvBuffer",
	"FlushInterval": "flushInterval", "PercentThreshold": "percentThreshold", "GaugesMaxTTL": "gaugesMaxTTL",
	"Histogram": "histogram", "MaxKeys": "maxKeys", "EvictIdleFlushes": "evictIdleFlushes",
	"MaxTimerSamples": "maxTimerSamples", "MaxSetMembers": "maxSetMembers", "MaxClients": "maxClients",
	"Graphite.Address": "graphiteHost/graphitePort", "Prometheus.Address": "prometheus",
	"Repeater.Targets": "repeater", "Repeater.Protocol": "repeaterProtocol",
}

// Validate checks the server's configuration and the backends' as
// NewServer, NewGraphite, NewPrometheus and NewRepeater would, defaults
// filled in, without opening anything, so a bad value is reported before
// anything starts. A backend's ConfigError names its field with the
// backend's name: "Graphite.Address", "Prometheus.Address",
// "Repeater.Targets".
func (st *Settings) Validate() error {
	c := st.Server
	c.setDefaults()
	if err := c.validate(); err != nil {
		return err
	}
	if st.Graphite != nil {
		g := *st.Graphite
		g.setDefaults()
		if err := g.validate(); err != nil {
			return prefixField("Graphite.", err)
		}
	}
	if st.Prometheus != nil {
		p := *st.Prometheus
		p.setDefaults()
		if err := p.validate(); err != nil {
			return prefixField("Prometheus.", err)
		}
	}
	if st.Repeater != nil {
		r := *st.Repeater
		r.setDefaults()
		if err := r.validate(); err != nil {
			return prefixField("Repeater.", err)
		}
	}
	return nil
}

func prefixField(prefix string, err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return badConfig(prefix+ce.Field, ce.Value, ce.Want)
	}
	return err
}

// ConfigFileOptions lists the options ParseConfigFile reads (used) and
// those it accepts and ignores with a warning (ignored). An option of the
// objects of a list or object option is named with its parent's name:
// "servers.socket", "graphite.globalPrefix".
func ConfigFileOptions() (used, ignored []string) {
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			used = append(used, prefix+name)
			ft := typ.Field(i).Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(prefix+name+".", ft)
			}
		}
	}
	walk("", fileConfigType)
	sort.Strings(used)
	ignored = append(ignored, knownIgnored...)
	sort.Strings(ignored)
	return used, ignored
}

func knownOption(name string) bool {
	for _, n := range knownIgnored {
		if n == name {
			return false
		}
	}
	typ := fileConfigType
	for i := 0; i < typ.NumField(); i++ {
		if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); tag == name {
			return true
		}
	}
	return false
}

func (f *fileConfig) apply(st *Settings) error {
	c := &st.Server
	listen := func(addr string, port *int, ipv6 bool) string {
		if addr == "" {
			addr = "0.0.0.0"
			if ipv6 {
				addr = "::"
			}
		}
		p := DefaultPort
		if port != nil {
			p = *port
		}
		return net.JoinHostPort(addr, strconv.Itoa(p))
	}
	if len(f.Servers) == 0 {
		c.UDP = []string{listen(f.Address, f.Port, f.AddressIPv6)}
	}
	for _, s := range f.Servers {
		switch s.Server {
		case "", "./servers/udp":
			c.UDP = append(c.UDP, listen(s.Address, s.Port, s.AddressIPv6))
		case "./servers/tcp":
			if s.Socket != "" {
				return badConfig("servers", s.Socket, `a TCP server on a unix socket is not supported; use "unixgram"`)
			}
			c.TCP = append(c.TCP, listen(s.Address, s.Port, s.AddressIPv6))
		default:
			return badConfig("servers", strconv.Quote(s.Server), "must be ./servers/udp or ./servers/tcp")
		}
	}
	c.Unixgram = f.Unixgram
	if f.FlushInterval != nil {
		c.FlushInterval = time.Duration(*f.FlushInterval * float64(time.Millisecond))
	}
	if err := f.thresholds(c); err != nil {
		return err
	}
	// Etsy: deleteIdleStats turns on the four that are not set.
	idle := f.DeleteIdleStats != nil && *f.DeleteIdleStats
	pick := func(v *bool) bool {
		if v != nil {
			return *v
		}
		return idle
	}
	c.DeleteCounters, c.DeleteTimers, c.DeleteGauges, c.DeleteSets =
		pick(f.DeleteCounters), pick(f.DeleteTimers), pick(f.DeleteGauges), pick(f.DeleteSets)
	if f.GaugesMaxTTL != nil && *f.GaugesMaxTTL > 1 {
		c.GaugesMaxTTL = *f.GaugesMaxTTL
	}
	if f.PrefixStats != nil {
		c.PrefixStats = *f.PrefixStats
	}
	c.NoSanitize = f.KeyNameSanitize != nil && !*f.KeyNameSanitize
	c.CalculatedTimerMetrics = f.CalculatedTimerMetrics
	for _, h := range f.Histogram {
		hc := HistogramConfig{Metric: h.Metric}
		for _, raw := range h.Bins {
			var v float64
			if string(raw) == `"inf"` {
				v = math.Inf(1)
			} else if err := json.Unmarshal(raw, &v); err != nil {
				return badConfig("histogram", string(raw), `bins must be numbers or "inf"`)
			}
			hc.Bins = append(hc.Bins, v)
		}
		c.Histogram = append(c.Histogram, hc)
	}
	c.UDPReaders, c.MaxKeys, c.EvictIdleFlushes, c.MaxTimerSamples = f.UDPReaders, f.MaxKeys, f.EvictIdleFlushes, f.MaxTimerSamples
	c.MaxSetMembers, c.MaxClients, c.RecvBuffer = f.MaxSetMembers, f.MaxClients, f.RecvBuffer
	return f.backends(st)
}

func (f *fileConfig) thresholds(c *Config) error {
	if len(f.PercentThreshold) == 0 {
		return nil
	}
	var one float64
	if err := json.Unmarshal(f.PercentThreshold, &one); err == nil {
		c.PercentThreshold = []float64{one}
		return nil
	}
	if err := json.Unmarshal(f.PercentThreshold, &c.PercentThreshold); err != nil {
		return badConfig("percentThreshold", string(f.PercentThreshold), "must be a number or a list of numbers")
	}
	return nil
}

func (f *fileConfig) backends(st *Settings) error {
	backends := f.Backends
	if backends == nil {
		backends = []string{"./backends/graphite"}
	}
	for _, b := range backends {
		switch b {
		case "./backends/graphite":
			if f.GraphiteHost == "" {
				continue // Etsy: metrics processed, then discarded
			}
			if f.GraphiteProtocol != nil && *f.GraphiteProtocol != "text" {
				return badConfig("graphiteProtocol", strconv.Quote(*f.GraphiteProtocol), "only text is supported")
			}
			port := 2003
			if f.GraphitePort != nil {
				port = *f.GraphitePort
			}
			g := &GraphiteConfig{
				Address:           net.JoinHostPort(f.GraphiteHost, strconv.Itoa(port)),
				NoLegacyNamespace: f.Graphite.LegacyNamespace != nil && !*f.Graphite.LegacyNamespace,
				GlobalPrefix:      f.Graphite.GlobalPrefix, PrefixCounter: f.Graphite.PrefixCounter,
				PrefixTimer: f.Graphite.PrefixTimer, PrefixGauge: f.Graphite.PrefixGauge, PrefixSet: f.Graphite.PrefixSet,
				PrefixStats:   st.Server.PrefixStats,
				NoFlushCounts: f.FlushCounts != nil && !*f.FlushCounts,
				Sanitize:      st.Server.NoSanitize,
				Self:          true,
			}
			if f.Graphite.GlobalSuffix != nil {
				g.GlobalSuffix = *f.Graphite.GlobalSuffix
			}
			st.Graphite = g
		case "./backends/console":
			st.Console = true
		case "./backends/repeater":
			r := &RepeaterConfig{Protocol: f.RepeaterProtocol}
			if r.Protocol == "" {
				r.Protocol = "udp4" // Etsy's default
			}
			for _, t := range f.Repeater {
				r.Targets = append(r.Targets, net.JoinHostPort(t.Host, strconv.Itoa(t.Port)))
			}
			st.Repeater = r
		default:
			return badConfig("backends", strconv.Quote(b), "must be ./backends/graphite, ./backends/console or ./backends/repeater")
		}
	}
	if f.Prometheus != "" {
		st.Prometheus = &PrometheusConfig{Address: f.Prometheus}
	}
	return nil
}
