package main

import (
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/logd"
)

// logdFlagOf names the flag of each logd.Config field, as logd.ConfigError
// (and, under "Storage.", storage.ConfigError) spell them.
var logdFlagOf = map[string]string{
	"DefaultPartitions":           "partitions",
	"MaxRequestBytes":             "max-request-bytes",
	"MaxInFlightRequestBytes":     "max-inflight-request-bytes",
	"RequestTimeout":              "request-timeout",
	"MaxConnections":              "max-connections",
	"MaxConnectionsPerIP":         "max-connections-per-ip",
	"IdleTimeout":                 "idle-timeout",
	"AdvertisedPort":              "advertise",
	"Storage.Dir":                 "dir",
	"Storage.Fsync":               "fsync",
	"Storage.FsyncInterval":       "fsync-interval",
	"Storage.RetentionAge":        "retention",
	"Storage.RetentionBytes":      "retention-bytes",
	"Storage.SegmentBytes":        "segment-bytes",
	"Storage.SegmentAge":          "segment-age",
	"Storage.MaintenanceInterval": "maintenance-interval",
	"Storage.OffsetsRetention":    "offsets-retention",
	"Storage.MaxOffsetBytes":      "max-offset-bytes",

	"MaxUnauthenticatedRequestBytes": "max-unauthenticated-request-bytes",
	"MaxRebalanceTimeout":            "max-rebalance-timeout",
}

// checkLogdFlags refuses what the libraries cannot: a value of 0, which
// their Configs take as "the default", given on purpose. It also turns
// a negative --retention-bytes into -1, "no limit".
func checkLogdFlags(fs *pflag.FlagSet, cfg *logd.Config) error {
	if cfg.Storage.Dir == "" {
		return usagef("--dir is required")
	}
	st := &cfg.Storage
	for _, z := range []struct {
		flag   string
		isZero bool
		want   string
	}{
		{"partitions", cfg.DefaultPartitions == 0, "must be ≥ 1"},
		{"max-request-bytes", cfg.MaxRequestBytes == 0, "must be ≥ 1024"},
		{"max-inflight-request-bytes", cfg.MaxInFlightRequestBytes == 0, "must be ≥ 2 × --max-request-bytes"},
		{"request-timeout", cfg.RequestTimeout == 0, "must be > 0"},
		{"max-connections", cfg.MaxConnections == 0, "must be ≥ 1"},
		{"max-connections-per-ip", cfg.MaxConnectionsPerIP == 0, "must be ≥ 1"},
		{"idle-timeout", cfg.IdleTimeout == 0, "must be > 0"},
		{"max-unauthenticated-request-bytes", cfg.MaxUnauthenticatedRequestBytes == 0, "must be in [1024, --max-request-bytes]"},
		{"max-rebalance-timeout", cfg.MaxRebalanceTimeout == 0, "must be ≥ 6s"},
		{"fsync-interval", st.FsyncInterval == 0, "must be > 0"},
		{"retention", st.RetentionAge == 0, "must be > 0, or negative for never"},
		{"retention-bytes", st.RetentionBytes == 0, "must be ≥ 1, or negative for no limit"},
		{"segment-bytes", st.SegmentBytes == 0, "must be in [1024, 1073741824]"},
		{"segment-age", st.SegmentAge == 0, "must be > 0, or negative for never"},
		{"maintenance-interval", st.MaintenanceInterval == 0, "must be > 0"},
		{"offsets-retention", st.OffsetsRetention == 0, "must be > 0, or negative for never"},
		{"max-offset-bytes", st.MaxOffsetBytes == 0, "must be ≥ 1"},
	} {
		if z.isZero && fs.Changed(z.flag) {
			return usagef("--%s %s: %s", z.flag, fs.Lookup(z.flag).Value, z.want)
		}
	}
	if st.RetentionBytes < 0 {
		st.RetentionBytes = -1
	}
	return nil
}

// checkListenAddr checks an address to listen on: host:port, the port a
// number in [0, 65535] (0: any free port) or a service name.
func checkListenAddr(flag, addr string) error {
	if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
		return usagef("--%s %s: want host:port, port in [0, 65535]: %v", flag, addr, err)
	}
	return nil
}

// parseAdvertise parses --advertise: host:port, the port a number in
// [1, 65535]; the host need not resolve here, only for clients.
func parseAdvertise(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", 0, usagef("--advertise %s: want host:port", addr)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", 0, usagef("--advertise %s: port must be a number in [1, 65535]", addr)
	}
	return host, int32(p), nil
}

// durationOrNever is a duration flag where any negative value, such as
// -1 (no unit needed), means never; it is stored as -1.
type durationOrNever struct{ d *time.Duration }

func (v durationOrNever) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n < 0 {
		*v.d = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = max(d, -1)
	return nil
}

func (v durationOrNever) String() string {
	if v.d == nil {
		return ""
	}
	if *v.d < 0 {
		return "-1"
	}
	return v.d.String()
}

func (v durationOrNever) Type() string { return "duration" }
