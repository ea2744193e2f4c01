package kafka

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// urlParams are the query parameters ParseURL knows.
var urlParams = []string{"acks", "buffer", "compression", "from", "group", "instance", "linger", "partition", "rebalance", "session"}

// ParseURL turns a logd:// (or kafka://) URL into a Config:
// logd://HOST:PORT[,HOST:PORT…]/TOPIC[?from=…&partition=…&group=…&instance=…&session=…&rebalance=…&acks=…&linger=…&compression=…&buffer=…].
// Every error wraps transport.ErrBadURL.
func ParseURL(u *url.URL) (Config, error) {
	var cfg Config
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{transport.ErrBadURL}, args...)...)
	}
	switch {
	case u.Host == "":
		return bad("no broker address")
	case u.User != nil:
		return bad("%s:// takes no user: this transport does not authenticate", u.Scheme)
	case u.Fragment != "":
		return bad("%s:// takes no fragment (%q)", u.Scheme, u.Fragment)
	}
	cfg.Brokers = strings.Split(u.Host, ",")
	for _, b := range cfg.Brokers {
		if err := checkBroker(b); err != nil {
			return bad("%v", err)
		}
	}
	cfg.Topic = strings.Trim(u.Path, "/")
	if cfg.Topic == "" || strings.Contains(cfg.Topic, "/") {
		return bad("path %q must be one topic", u.Path)
	}
	if err := checkTopic(cfg.Topic); err != nil {
		return bad("%v", err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("query %q: %v", u.RawQuery, err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(urlParams, k):
			return bad("unknown parameter %q (known: %s)", k, strings.Join(urlParams, ", "))
		case len(q[k]) > 1:
			return bad("parameter %q given %d times", k, len(q[k]))
		}
	}
	switch from := q.Get("from"); {
	case from == "" || from == "earliest":
	case from == "latest":
		cfg.From = Latest()
	default:
		if off, err := strconv.ParseInt(from, 10, 64); err == nil && off >= 0 {
			cfg.From = AtOffset(off)
		} else if t, err := time.Parse(time.RFC3339Nano, from); err == nil {
			cfg.From = AtTime(t)
		} else {
			return bad("from=%q: want earliest, latest, an offset or an RFC 3339 time", from)
		}
	}
	if p := q.Get("partition"); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return bad("partition=%q: want a partition number", p)
		}
		cfg.Partitions = []int32{int32(n)}
	}
	if q.Has("group") && q.Get("group") == "" {
		return bad("group=: want a group name")
	}
	cfg.Group = q.Get("group")
	if cfg.Group != "" && cfg.Partitions != nil {
		return bad("partition and group together: the group assigns partitions")
	}
	if q.Has("instance") {
		if cfg.Instance = q.Get("instance"); cfg.Instance == "" || cfg.Group == "" {
			return bad("instance=%q: want a name, with group", cfg.Instance)
		}
	}
	for _, p := range []struct {
		name string
		to   *time.Duration
	}{{"session", &cfg.SessionTimeout}, {"rebalance", &cfg.RebalanceTimeout}} {
		if !q.Has(p.name) {
			continue
		}
		d, err := time.ParseDuration(q.Get(p.name))
		if err != nil || d <= 0 || cfg.Group == "" {
			return bad("%s=%q: want a duration > 0 (such as 30s), with group", p.name, q.Get(p.name))
		}
		*p.to = d
	}
	if q.Has("linger") {
		d, err := time.ParseDuration(q.Get("linger"))
		if err != nil || d < 0 {
			return bad("linger=%q: want a duration >= 0 (such as 5ms)", q.Get("linger"))
		}
		cfg.Linger = d
	}
	if q.Has("compression") {
		if cfg.Compression = q.Get("compression"); codec(cfg.Compression) == nil {
			return bad("compression=%q: want none, gzip, snappy, lz4 or zstd", cfg.Compression)
		}
	}
	if q.Has("buffer") {
		n, err := strconv.Atoi(q.Get("buffer"))
		if err != nil || n < 1 {
			return bad("buffer=%q: want a number of records >= 1", q.Get("buffer"))
		}
		cfg.MaxBuffered = n
	}
	switch acks := q.Get("acks"); acks {
	case "", "all":
	case "leader":
		cfg.LeaderAcks = true
	default:
		return bad("acks=%q: want all or leader", acks)
	}
	return cfg, nil
}
