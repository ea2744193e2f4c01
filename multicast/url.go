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
	"github.com/brokerless/brokerless/transport/faultnet"
)

// Scheme is the URL scheme this package registers with transport.
const Scheme = "mcast"

func init() { transport.Register(Scheme, openURL) }

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
	faults := faultnet.Faults{
		Loss:      p.float("loss"),
		Duplicate: p.float("dup"),
		Reorder:   p.float("reorder"),
		Seed:      int64(p.uint("seed", 63)),
	}
	if !faults.Zero() {
		cfg.Filter = func() (DatagramFilter, error) { return faultnet.NewFilter(faults) }
	}
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
