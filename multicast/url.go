package multicast

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
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
published while no subscriber listened is gone. No replay, no groups, no
acknowledgement.`,
		Params: []transport.Param{
			{Name: "iface", Value: "NAME", Doc: "interface to send and join on (default lo: this host only)"},
			{Name: "feed", Value: "1..4294967295", Doc: "the stream id, stable across publisher restarts (default 1)"},
			{Name: "ttl", Value: "0..255", Doc: "multicast TTL; 0 keeps datagrams on this host (default 1)"},
			{Name: "repairs", Value: "multicast|unicast", Doc: "send repairs to the group, or only to the subscriber that asked (default multicast)"},
			{Name: "join", Value: "live|earliest", Doc: "where a subscriber starts in a running stream: its next message, or what is still in the publisher's window (default live)"},
			{Name: "mtu", Value: "BYTES", Doc: "largest datagram, headers included, 256..65507 (default 1408)"},
			{Name: "rcvbuf", Value: "BYTES", Doc: "socket receive buffer requested (default 4 MiB; the kernel may clamp it)"},
			{Name: "sndbuf", Value: "BYTES", Doc: "socket send buffer requested (default 4 MiB)"},
			{Name: "linger", Value: "DURATION", Doc: "how long a closing publisher keeps answering NACKs (default 1s)"},
			{Name: "keyfile", Value: "PATH", Doc: "file holding the feed's shared key: every datagram authenticated"},
			{Name: "loss", Value: "0..1", Doc: "drop this fraction of received datagrams on purpose (subscriber; rehearsing loss)"},
			{Name: "dup", Value: "0..1", Doc: "duplicate this fraction of received datagrams on purpose (subscriber)"},
			{Name: "reorder", Value: "0..1", Doc: "reorder this fraction of received datagrams on purpose (subscriber)"},
			{Name: "seed", Value: "N", Doc: "seed of loss, dup and reorder"},
		},
		SourceDefaults: map[string]string{"join": "earliest"},
		Examples: []transport.Example{
			{URL: "mcast://239.1.2.3:7000?ttl=0", Doc: "feed 1 on lo, datagrams never leave this host"},
			{URL: "mcast://239.1.2.3:7000?iface=eth0&feed=7&repairs=unicast", Doc: "feed 7 on eth0, repairs only to the subscriber that asked"},
			{URL: "mcast://239.1.2.3:7000?join=earliest&loss=0.05", Doc: "start with the publisher's window, drop 5% on purpose"},
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

func openURL(_ context.Context, u *url.URL) (transport.Endpoint, error) {
	cfg, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrBadURL, err)
	}
	return endpoint{cfg}, nil
}

// ParseURL turns an mcast:// URL into a Config (see the package
// documentation for the parameters).
func ParseURL(u *url.URL) (Config, error) {
	var cfg Config
	if u.Scheme != Scheme {
		return cfg, fmt.Errorf("%w: scheme %q is not %s", transport.ErrBadURL, u.Scheme, Scheme)
	}
	group, err := netip.ParseAddrPort(u.Host)
	if err != nil {
		return cfg, fmt.Errorf("%w: group %q: %v", transport.ErrBadURL, u.Host, err)
	}
	cfg.Group = group
	p := params{q: u.Query()}
	cfg.Interface = p.q.Get("iface")
	cfg.Feed = uint32(p.uint("feed", 32))
	if p.q.Has("ttl") {
		cfg.TTL = int(p.uint("ttl", 8))
		cfg.HostOnly = cfg.TTL == 0
	}
	switch r := p.q.Get("repairs"); r {
	case "", "multicast":
	case "unicast":
		cfg.UnicastRepairs = true
	default:
		p.fail("repairs", r, "want multicast or unicast")
	}
	switch j := p.q.Get("join"); j {
	case "", "live":
	case "earliest":
		cfg.Receiver.Join = reliable.JoinEarliest
	default:
		p.fail("join", j, "want live or earliest")
	}
	cfg.Sender.MTU = int(p.uint("mtu", 16))
	cfg.RecvBuffer = int(p.uint("rcvbuf", 31))
	cfg.SendBuffer = int(p.uint("sndbuf", 31))
	cfg.CloseLinger = p.duration("linger")
	cfg.Faults.Loss = p.float("loss")
	cfg.Faults.Duplicate = p.float("dup")
	cfg.Faults.Reorder = p.float("reorder")
	cfg.Faults.Seed = int64(p.uint("seed", 63))
	if path := p.q.Get("keyfile"); path != "" {
		var err error
		if cfg.Key, err = ReadKeyFile(path); err != nil {
			p.fail("keyfile", path, err.Error())
		}
	}
	return cfg, p.err
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

func (p *params) uint(key string, bits int) uint64 {
	s := p.q.Get(key)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		p.fail(key, s, err.Error())
	}
	return v
}

func (p *params) float(key string) float64 {
	s := p.q.Get(key)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		p.fail(key, s, "want a probability in [0, 1]")
	}
	return v
}

func (p *params) duration(key string) time.Duration {
	s := p.q.Get(key)
	if s == "" {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		p.fail(key, s, err.Error())
	}
	return v
}
