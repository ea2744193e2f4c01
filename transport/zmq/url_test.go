package zmq

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// TestParseURLLimits: maxpending, frametimeout, maxstreambytes and the
// ping parameters set Config.MaxPendingBytes, FrameTimeout,
// MaxStreamBytes, PingInterval, PingTimeout and PingTTL, with the
// same parsing and errors as the older parameters, and the Config they
// make passes validate.
func TestParseURLLimits(t *testing.T) {
	const base = "zmq+tcp://127.0.0.1:5556"
	for _, tt := range []struct {
		query string
		check func(c Config) bool
	}{
		{"", func(c Config) bool { return c.MaxPendingBytes == 0 && c.FrameTimeout == 0 && c.MaxStreamBytes == 0 }},
		{"maxpending=134217728", func(c Config) bool { return c.MaxPendingBytes == 128<<20 }},
		{"maxpending=8388608", func(c Config) bool { return c.MaxPendingBytes == DefaultMaxMessageBytes }},
		{"maxmsg=1024&maxpending=4096", func(c Config) bool { return c.MaxMessageBytes == 1024 && c.MaxPendingBytes == 4096 }},
		{"frametimeout=250ms", func(c Config) bool { return c.FrameTimeout == 250*time.Millisecond }},
		{"frametimeout=1m", func(c Config) bool { return c.FrameTimeout == time.Minute }},
		{"maxstreambytes=1048576", func(c Config) bool { return c.MaxStreamBytes == 1<<20 }},
		{"ping=5s&pingtimeout=10s&pingttl=30s", func(c Config) bool {
			return c.PingInterval == 5*time.Second && c.PingTimeout == 10*time.Second && c.PingTTL == 30*time.Second
		}},
		{"pingttl=6553.5s", func(c Config) bool { return c.PingTTL == 6553500*time.Millisecond }},
	} {
		u, _ := url.Parse(base + "?" + tt.query)
		uc, err := ParseURL(u)
		if err != nil {
			t.Errorf("%q: %v", tt.query, err)
			continue
		}
		if !tt.check(uc.Config) {
			t.Errorf("%q: got %+v", tt.query, uc.Config)
		}
		for _, c := range []Config{uc.PublisherConfig(), uc.SubscriberConfig()} {
			c.setDefaults()
			if err := c.validate(); err != nil {
				t.Errorf("%q: the Config made fails validate: %v", tt.query, err)
			}
		}
	}
	for _, tt := range []struct{ query, want string }{
		{"maxpending=0", `maxpending="0": want 256..1099511627776`},
		{"maxpending=-1", `maxpending="-1": want 256..1099511627776`},
		{"maxpending=64MiB", `maxpending="64MiB": want 256..1099511627776`},
		{"maxpending=1048576", `maxpending="1048576": must be at least maxmsg (8388608)`},
		{"maxmsg=4096&maxpending=1024", `maxpending="1024": must be at least maxmsg (4096)`},
		{"maxpending=1&maxpending=2", `parameter "maxpending" given 2 times`},
		{"frametimeout=0s", `frametimeout="0s": want a positive duration such as 500ms`},
		{"frametimeout=-1s", `frametimeout="-1s": want a positive duration such as 500ms`},
		{"frametimeout=10", `frametimeout="10": want a positive duration such as 500ms`},
		{"frametimeout=off", `frametimeout="off": want a positive duration such as 500ms`},
		{"ping=0s", `ping="0s": want a positive duration such as 500ms`},
		{"pingtimeout=soon", `pingtimeout="soon": want a positive duration such as 500ms`},
		{"pingttl=2h", `pingttl="2h": must be at most 6553.5s`},
		{"maxstreambytes=100", `maxstreambytes="100": want 1024..1099511627776`},
		{"maxstreambytes=lots", `maxstreambytes="lots": want 1024..1099511627776`},
	} {
		u, _ := url.Parse(base + "?" + tt.query)
		_, err := ParseURL(u)
		if !errors.Is(err, transport.ErrBadURL) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want transport.ErrBadURL saying %q", tt.query, err, tt.want)
		}
	}
}
