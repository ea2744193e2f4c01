package multicast

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

// Scheme is the URL scheme this package registers with transport.
const Scheme = "mcast"

func init() {
	transport.Register(transport.Scheme{
		Name:      Scheme,
		Open:      openURL,
		Summary:   "UDP multicast feed: one publisher, any number of subscribers, loss repaired by NACK",
		Form:      "mcast://GROUP:PORT[?PARAM=VALUE&...]  (GROUP an IPv4 multicast address)",
		Semantics: semantics,
		Notes: `Messages arrive in order per stream; lost datagrams are repaired from the
publisher's retransmit window, and what is no longer in it is reported as a
gap, never silently. Nothing is stored: a subscriber starts at the live edge
(or, with join=earliest, at what the window still holds), and a message
published while no subscriber listened is gone. No groups, no
acknowledgement. With archive=URL, a log that a recorder (brokerless mcast
record, or brokerless pipe mcast://... logd://...) writes the feed to, a
subscriber also gets what the publisher can no longer give from there: the
feed's history (join=earliest|seq:N|time:T), merged into the live feed with
no gap and no duplicate; losses beyond the publisher's window; the tail of a
session whose publisher crashed. Its gaps are then what the archive lacks too.`,
		Params: []transport.Param{
			{Name: "iface", Value: "NAME", Doc: "interface to send and join on (default lo: this host only)"},
			{Name: "feed", Value: "1..4294967295", Doc: "the stream id, stable across publisher restarts (default 1)"},
			{Name: "ttl", Value: "0..255", Doc: "multicast TTL; 0 keeps datagrams on this host (default 1)"},
			{Name: "repairs", Value: "multicast|unicast", Doc: "send repairs to the group, or only to the subscriber that asked (default multicast)"},
			{Name: "join", Value: "live|earliest|seq:N|time:T", Doc: "where a subscriber starts: the next message (default live); earliest: what the publisher's window still holds, or, with archive=, the archive's oldest message; with archive=, seq:N (sequence number N of the feed's current session) or time:T (RFC 3339)"},
			{Name: "archive", Value: "URL", Doc: "the log a recorder writes the feed to (logd://HOST:PORT/TOPIC, escaped: ? as %3F, & as %26): history for join=, and what the publisher can no longer repair, from there"},
			{Name: "offload", Value: "on|off", Doc: "UDP segmentation and receive offload (GSO/GRO) where the kernel offers them (default on); off for a feed whose subscribers predate padded datagrams"},
			{Name: "mtu", Value: "BYTES", Doc: "largest datagram, headers included, 256..65507 (default 1408)"},
			{Name: "rcvbuf", Value: "BYTES", Doc: "socket receive buffer requested (default 4 MiB; the kernel may clamp it)"},
			{Name: "sndbuf", Value: "BYTES", Doc: "socket send buffer requested (default 4 MiB)"},
			{Name: "linger", Value: "DURATION", Doc: "how long a closing publisher keeps answering NACKs (default 1s)"},
			{Name: "spin", Value: "DURATION", Doc: "subscriber: poll an empty socket this long before sleeping, up to 1s (default 0; e.g. 50us: lower latency for a busy feed, a core's CPU while it is busy)"},
			{Name: "keyfile", Value: "PATH", Doc: "file holding the feed's shared key: every datagram authenticated"},
			{Name: "loss", Value: "0..1", Doc: "drop this fraction of received datagrams on purpose (subscriber; rehearsing loss)"},
			{Name: "dup", Value: "0..1", Doc: "duplicate this fraction of received datagrams on purpose (subscriber)"},
			{Name: "reorder", Value: "0..1", Doc: "reorder this fraction of received datagrams on purpose (subscriber)"},
			{Name: "seed", Value: "N", Doc: "seed of loss, dup and reorder"},
			{Name: "flow", Value: "none|min|tagged", Doc: "publisher's flow control: never pass the slowest subscriber (min), or the slowest with flow-tag (tagged), instead of going at its own pace (default none)"},
			{Name: "flow-tag", Value: "N", Doc: "publisher with flow=tagged: the tag of the subscribers it waits for; subscriber: the tag it reports"},
			{Name: "flow-min", Value: "N", Doc: "publisher with flow control: publish nothing until N subscribers report (default 0)"},
			{Name: "flow-timeout", Value: "DURATION", Doc: "publisher with flow control: stop waiting for a subscriber silent this long (default 2s)"},
		},
		SourceDefaults: map[string]string{"join": "earliest"},
		Examples: []transport.Example{
			{URL: "mcast://239.1.2.3:7000?ttl=0", Doc: "feed 1 on lo, datagrams never leave this host"},
			{URL: "mcast://239.1.2.3:7000?iface=eth0&feed=7&repairs=unicast", Doc: "feed 7 on eth0, repairs only to the subscriber that asked"},
			{URL: "mcast://239.1.2.3:7000?join=earliest&loss=0.05", Doc: "start with the publisher's window, drop 5% on purpose"},
			{URL: "mcast://239.1.2.3:7000?ttl=0&archive=logd://127.0.0.1:9092/ticks&join=earliest", Doc: "the feed's whole history from its archive, then live; what the publisher cannot repair, from the archive"},
		},
	})
}

type endpoint struct{ cfg Config }

func (e endpoint) Publisher(ctx context.Context) (transport.Publisher, error) {
	return NewPublisher(ctx, e.cfg)
}

func (e endpoint) Subscriber(ctx context.Context) (transport.Subscriber, error) {
	return NewSubscriber(ctx, e.cfg)
}

func openURL(_ context.Context, u *url.URL, o transport.Options) (transport.Endpoint, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	cfg.Logger = o.Logger
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrBadURL, err)
	}
	if _, _, err := iface(cfg.Interface); err != nil {
		why := err.Error()
		var ce *ConfigError
		if errors.As(err, &ce) {
			why = ce.Want
		}
		return nil, fmt.Errorf("%w: iface=%q: %s", transport.ErrBadURL, cfg.Interface, why)
	}
	return endpoint{cfg}, nil
}

// urlParams are the query parameters an mcast:// URL takes.
var urlParams = []string{
	"iface", "feed", "ttl", "repairs", "offload", "join", "mtu", "rcvbuf", "sndbuf", "linger",
	"keyfile", "loss", "dup", "reorder", "seed", "flow", "flow-tag", "flow-min", "flow-timeout", "archive", "spin",
}

// ParseURL turns an mcast:// URL into a Config (see the package
// documentation for the parameters). It refuses, with one error wrapping
// transport.ErrBadURL that says what is wrong, a group that is not an
// IPv4 multicast address and port, a path, user or fragment, a parameter
// it does not know, given twice or empty, and a value out of range.
// from= is refused too: multicast does not replay (see the package
// documentation).
func ParseURL(u *url.URL) (Config, error) {
	var cfg Config
	if err := checkURLShape(u); err != nil {
		return cfg, err
	}
	group, err := parseGroup(u.Host)
	if err != nil {
		return cfg, err
	}
	cfg.Group = group
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return cfg, fmt.Errorf("%w: query %q: %v", transport.ErrBadURL, u.RawQuery, err)
	}
	if err := checkParams(q); err != nil {
		return cfg, err
	}
	p := params{q: q}
	cfg.Interface = q.Get("iface")
	cfg.Feed = uint32(p.uintIn("feed", 1, 1<<32-1))
	if q.Has("ttl") {
		cfg.TTL = int(p.uintIn("ttl", 0, 255))
		cfg.HostOnly = cfg.TTL == 0
	}
	switch r := q.Get("repairs"); r {
	case "", "multicast":
	case "unicast":
		cfg.UnicastRepairs = true
	default:
		p.fail("repairs", r, "want multicast or unicast")
	}
	switch o := q.Get("offload"); o {
	case "", "on":
	case "off":
		cfg.NoOffload = true
	default:
		p.fail("offload", o, "want on or off")
	}
	cfg.Archive.URL = q.Get("archive")
	if cfg.Archive.URL != "" {
		if _, err := logReader(context.Background(), cfg.Archive.URL); err != nil {
			p.fail("archive", cfg.Archive.URL, strings.TrimPrefix(err.Error(), transport.ErrBadURL.Error()+": "))
		}
	}
	switch j := q.Get("join"); {
	case j == "", j == "live":
	case j == "earliest" && cfg.Archive.URL == "":
		cfg.Receiver.Join = reliable.JoinEarliest
	case cfg.Archive.URL != "":
		var err error
		if cfg.Archive.Join, err = ParseJoin(j); err != nil {
			p.fail("join", j, "want live, earliest, seq:N or time:T (RFC 3339)")
		}
	case strings.HasPrefix(j, "seq:"), strings.HasPrefix(j, "time:"):
		p.fail("join", j, "needs archive=URL: without an archive a subscriber starts live, or with join=earliest at what the publisher's window holds")
	default:
		p.fail("join", j, "want live or earliest (what the publisher's retransmit window still holds); seq:N and time:T with archive=")
	}
	cfg.Sender.MTU = int(p.uintIn("mtu", reliable.MinMTU, reliable.MaxMTU))
	cfg.RecvBuffer = int(p.uintIn("rcvbuf", 1, 1<<31-1))
	cfg.SendBuffer = int(p.uintIn("sndbuf", 1, 1<<31-1))
	cfg.CloseLinger = p.duration("linger")
	if cfg.Spin = p.duration("spin"); cfg.Spin > maxSpin {
		p.fail("spin", q.Get("spin"), "want at most 1s")
	}
	cfg.Filter = urlFilter(&p)
	parseFlow(&p, &cfg)
	if path := q.Get("keyfile"); path != "" {
		var err error
		if cfg.Key, err = ReadKeyFile(path); err != nil {
			p.fail("keyfile", path, err.Error())
		}
	}
	return cfg, p.err
}

// parseFlow reads the flow-control parameters: the publisher's mode,
// tag, minimum receivers and receiver timeout, and the tag a subscriber
// reports.
func parseFlow(p *params, cfg *Config) {
	f := &cfg.Sender.Flow
	switch m := p.q.Get("flow"); m {
	case "", "none":
	case "min":
		f.Mode = reliable.FlowMin
	case "tagged":
		f.Mode = reliable.FlowTagged
	default:
		p.fail("flow", m, "want none, min or tagged")
	}
	f.Tag = p.uintIn("flow-tag", 1, 1<<63)
	cfg.Receiver.Tag = f.Tag
	f.MinReceivers = int(p.uintIn("flow-min", 0, 1<<16))
	f.ReceiverTimeout = p.duration("flow-timeout")
	switch {
	case f.Mode == reliable.FlowTagged && f.Tag == 0:
		p.fail("flow", "tagged", "needs flow-tag=N, the tag of the subscribers to wait for")
	case f.Mode == reliable.FlowNone && (p.q.Has("flow-min") || p.q.Has("flow-timeout")):
		p.fail("flow", "none", "flow-min and flow-timeout need flow=min or flow=tagged")
	}
}

// checkURLShape refuses what an mcast:// URL cannot have besides a host
// and a query.
func checkURLShape(u *url.URL) error {
	const want = "want mcast://GROUP:PORT?PARAM=VALUE&..., e.g. mcast://239.1.2.3:7000?iface=lo"
	switch {
	case u.Scheme != Scheme:
		return fmt.Errorf("%w: scheme %q is not %s", transport.ErrBadURL, u.Scheme, Scheme)
	case u.Opaque != "":
		return fmt.Errorf("%w: %q: %s", transport.ErrBadURL, u.Opaque, want)
	case u.User != nil:
		return fmt.Errorf("%w: mcast:// takes no user: %s", transport.ErrBadURL, want)
	case u.Path != "":
		return fmt.Errorf("%w: mcast:// takes no path (%q): a feed is named by its group, port and feed=", transport.ErrBadURL, u.Path)
	case u.Fragment != "":
		return fmt.Errorf("%w: mcast:// takes no fragment (%q)", transport.ErrBadURL, u.Fragment)
	case u.Host == "":
		return fmt.Errorf("%w: no group: %s", transport.ErrBadURL, want)
	}
	return nil
}

// parseGroup reads GROUP:PORT, an IPv4 multicast address and a port.
func parseGroup(host string) (netip.AddrPort, error) {
	g, err := netip.ParseAddrPort(host)
	switch {
	case err != nil:
		return g, fmt.Errorf("%w: group %q: want an IPv4 multicast address and a port, e.g. 239.1.2.3:7000", transport.ErrBadURL, host)
	case !g.Addr().Is4():
		return g, fmt.Errorf("%w: group %v: multicast here is IPv4; want an address in 224.0.0.0/4, e.g. 239.1.2.3:7000", transport.ErrBadURL, g.Addr())
	case !g.Addr().IsMulticast():
		return g, fmt.Errorf("%w: group %v is not a multicast address: want one in 224.0.0.0/4, e.g. 239.1.2.3:7000", transport.ErrBadURL, g.Addr())
	case g.Port() == 0:
		return g, fmt.Errorf("%w: group %v: want a port from 1 to 65535", transport.ErrBadURL, g)
	}
	return g, nil
}

// checkParams refuses a parameter that is unknown, given twice or empty.
func checkParams(q url.Values) error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := q[k]
		switch {
		case k == "from":
			return fmt.Errorf("%w: from=%q: multicast does not replay: a subscriber starts at the live edge, or with join=earliest "+
				"at the oldest message the publisher's retransmit window still holds; replay from a position needs an archive: "+
				"archive=URL with join=earliest|seq:N|time:T", transport.ErrBadURL, v[0])
		case !slices.Contains(urlParams, k):
			return fmt.Errorf("%w: unknown parameter %q (mcast:// takes %s)", transport.ErrBadURL, k, strings.Join(urlParams, ", "))
		case len(v) > 1:
			return fmt.Errorf("%w: %s given %d times", transport.ErrBadURL, k, len(v))
		case v[0] == "":
			return fmt.Errorf("%w: %s= has no value", transport.ErrBadURL, k)
		}
	}
	return nil
}

// params reads query parameters, keeping the first error.
type params struct {
	q   url.Values
	err error
}

func (p *params) fail(key, val, why string) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s=%q: %s", transport.ErrBadURL, key, val, why)
	}
}

// uintIn reads an integer in [lo, hi]; 0 when absent.
func (p *params) uintIn(key string, lo, hi uint64) uint64 {
	s := p.q.Get(key)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < lo || v > hi {
		p.fail(key, s, fmt.Sprintf("want an integer from %d to %d", lo, hi))
		return 0
	}
	return v
}

func (p *params) float(key string) float64 {
	s := p.q.Get(key)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		p.fail(key, s, "want a probability from 0 to 1")
		return 0
	}
	return v
}

func (p *params) duration(key string) time.Duration {
	s := p.q.Get(key)
	if s == "" {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		p.fail(key, s, "want a positive duration, e.g. 200ms")
		return 0
	}
	return v
}
