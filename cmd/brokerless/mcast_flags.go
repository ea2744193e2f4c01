package main

import (
	"context"
	"net/netip"
	"time"

	"github.com/spf13/pflag"

	"github.com/brokerless/brokerless/multicast"
)

// mcastFlags are the flags mcast pub and mcast sub share: where the feed
// is.
type mcastFlags struct {
	group   string
	iface   string
	feed    uint32
	keyFile string
}

func (f *mcastFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.group, "group", "", "multicast group and port, e.g. 239.1.2.3:7000 (required)")
	fs.StringVar(&f.iface, "iface", multicast.DefaultInterface, "network interface the group is sent and joined on")
	fs.Uint32Var(&f.feed, "feed", multicast.DefaultFeed, "feed number: the stream id, stable across publisher restarts")
	fs.StringVar(&f.keyFile, "key-file", "", "file holding the feed's shared key (16+ bytes, e.g. from head -c 32 /dev/urandom): datagrams are authenticated, and those without a valid tag dropped")
}

// config checks the flags and returns the multicast configuration they
// describe.
func (f *mcastFlags) config() (multicast.Config, error) {
	group, err := parseGroup(f.group)
	if err != nil {
		return multicast.Config{}, err
	}
	if f.iface == "" {
		return multicast.Config{}, usagef("--iface must name an interface, e.g. lo")
	}
	if f.feed == 0 {
		return multicast.Config{}, usagef("--feed must be at least 1")
	}
	cfg := multicast.Config{Group: group, Interface: f.iface, Feed: f.feed}
	if f.keyFile != "" {
		if cfg.Key, err = multicast.ReadKeyFile(f.keyFile); err != nil {
			return cfg, usagef("--key-file %s: %v", f.keyFile, err)
		}
	}
	return cfg, nil
}

// authenticated is what the start line says of the key.
func authenticated(cfg multicast.Config) string {
	if cfg.Key == nil {
		return ""
	}
	return ", datagrams authenticated"
}

// mcastFlagOf maps the multicast.Config fields that mcast pub and mcast
// sub set from flags to those flags, so that a value the library refuses
// is reported by its flag name (see configError).
var mcastFlagOf = map[string]string{
	"Group":      "group",
	"Interface":  "iface",
	"TTL":        "ttl",
	"Sender.MTU": "mtu",
	// mcast sub's archive
	"Archive.URL":  "archive",
	"Archive.Join": "join",
}

// parseGroup reads an IPv4 multicast address and port.
func parseGroup(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, usagef("--group is required, e.g. --group 239.1.2.3:7000")
	}
	g, err := netip.ParseAddrPort(s)
	switch {
	case err != nil:
		return g, usagef("--group %q: want an IPv4 multicast address and port, e.g. 239.1.2.3:7000", s)
	case !g.Addr().Is4() || !g.Addr().IsMulticast():
		return g, usagef("--group %q: %v is not an IPv4 multicast address (224.0.0.0/4; 239.0.0.0/8 is for local use)", s, g.Addr())
	case g.Port() == 0:
		return g, usagef("--group %q: the port must not be 0", s)
	}
	return g, nil
}

// withDuration ends ctx after d when d is positive; otherwise only when
// ctx ends or cancel is called.
func withDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// nonNegative checks a duration flag.
func nonNegative(flag string, d time.Duration) error {
	if d < 0 {
		return usagef("--%s %v is negative", flag, d)
	}
	return nil
}
