package zmq

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brokerless/brokerless/transport"
)

// Schemes this package registers with transport.
const (
	SchemeTCP = "zmq+tcp"
	SchemeIPC = "zmq+ipc"
)

const urlNotes = `ZeroMQ PUB/SUB over ZMTP 3, wire-compatible with libzmq 4.x. A message is
three frames: its topic (subscriptions are topic prefixes), a header frame
(feed, stream, sequence number, time, key, headers) and its payload. Each
topic of each publisher start is a stream: a subscriber delivers it in
order, never twice, and reports every message it missed after its first
as a gap — a publisher drops what a slow subscriber's queue cannot hold
(hwm=, slow=) and a connection lost loses what was in flight; nothing is
repaired, and idle heartbeats make a lost tail visible. Several
publishers on one topic are separate streams; a restarted publisher
that keeps its feed= replaces its old streams once they ended or their
connection closed (the default feed is random per process). A publisher
without header frames (plain libzmq) is still received: its messages are
numbered by the subscriber as they arrive, per connection, under feed 0,
so nothing it dropped can be seen. A plain libzmq subscriber gets the three frames
(pack=on: packs it cannot read). Nothing is stored: no replay, no groups.`

func init() {
	for _, sc := range []struct{ name, form, example string }{
		{SchemeTCP, SchemeTCP + "://HOST:PORT[,HOST:PORT...][?PARAM=VALUE&...]", "127.0.0.1:5556"},
		{SchemeIPC, SchemeIPC + "://PATH[?PARAM=VALUE&...]  (PATH absolute: zmq+ipc:///tmp/feed.sock)", "/tmp/feed.sock"},
	} {
		base := sc.name + "://" + sc.example
		transport.Register(transport.Scheme{
			Name:      sc.name,
			Open:      openURL,
			Summary:   "ZeroMQ pub/sub (libzmq-compatible), numbered so loss shows as gaps",
			Form:      sc.form,
			Semantics: semantics,
			Notes:     urlNotes,
			Params: []transport.Param{
				{Name: "mode", Value: "bind|connect", Doc: "bind the address(es) or connect to them (default: a publisher binds, a subscriber connects); connected addresses are redialled with backoff"},
				{Name: "subscribe", Value: "PREFIX", Doc: "subscriber: take topics starting with PREFIX; repeat for more (default: every topic)"},
				{Name: "feed", Value: "1..4294967295", Doc: "publisher: its stable id; a restart that keeps it draws new sessions that replace the old (default: random per process)"},
				{Name: "pack", Value: "on|off", Doc: "publisher: pack messages queued for one topic into one ZMTP message while the network is busy (default off)"},
				{Name: "hwm", Value: "N", Doc: "publisher: messages queued per subscriber; subscriber: messages held unread (default 1000)"},
				{Name: "slow", Value: "drop|disconnect", Doc: "publisher: what a full subscriber queue does: drop and count, or disconnect the subscriber (default drop)"},
				{Name: "heartbeat", Value: "DURATION|off", Doc: "publisher: how soon a quiet stream says where it is, so a lost tail is reported (default 1s)"},
				{Name: "maxmsg", Value: "BYTES", Doc: "largest ZMTP message accepted from a peer; a larger one closes the connection (default 8 MiB)"},
				{Name: "maxpending", Value: "BYTES", Doc: "bytes of frames over 64 KiB announced and not yet received, across the socket's connections; a frame waits for room before it is read (default 64 MiB, at least maxmsg)"},
				{Name: "frametimeout", Value: "DURATION", Doc: "how long the body of a frame over 64 KiB may take after its header, waiting for room in maxpending included; the connection fails beyond (default 10s)"},
				{Name: "maxstreambytes", Value: "BYTES", Doc: "subscriber: memory of the streams it tracks, topics included; the least recently seen is forgotten beyond (default 16 MiB)"},
				{Name: "ping", Value: "DURATION", Doc: "ZMTP 3.1 heartbeats: send a PING this often on every connection (default: none, as libzmq's ZMQ_HEARTBEAT_IVL)"},
				{Name: "pingtimeout", Value: "DURATION", Doc: "close a connection that sends nothing within this of a PING (default: the ping interval)"},
				{Name: "pingttl", Value: "DURATION", Doc: "ask peers to close the connection when they hear nothing from us within this, at most 6553.5s (default: none)"},
				{Name: "linger", Value: "DURATION", Doc: "publisher: how long Close waits for queued messages to be written (default 1s)"},
				{Name: "reconnect", Value: "DURATION", Doc: "first wait before redialling; doubles up to 5s (default 100ms)"},
				{Name: "loss", Value: "0..1", Doc: "subscriber: drop this fraction of received messages on purpose (rehearsing gaps)"},
				{Name: "dup", Value: "0..1", Doc: "subscriber: duplicate this fraction on purpose"},
				{Name: "reorder", Value: "0..1", Doc: "subscriber: reorder this fraction on purpose"},
				{Name: "seed", Value: "N", Doc: "seed of loss, dup and reorder"},
			},
			Examples: []transport.Example{
				{URL: base, Doc: "a publisher binds it, a subscriber connects to it, every topic"},
				{URL: base + "?subscribe=prices.&subscribe=news.", Doc: "a subscriber of two topic prefixes"},
				{URL: base + "?pack=on&hwm=10000&slow=disconnect", Doc: "a publisher that packs, and disconnects a subscriber 10,000 messages behind"},
				{URL: base + "?mode=bind", Doc: "a subscriber that binds, for publishers that connect (fan-in)"},
			},
		})
	}
}

// urlParams are the query parameters a zmq URL takes.
var urlParams = []string{"mode", "subscribe", "feed", "pack", "hwm", "slow", "heartbeat", "maxmsg", "maxpending", "frametimeout", "maxstreambytes", "ping", "pingtimeout", "pingttl", "linger", "reconnect", "loss", "dup", "reorder", "seed"}

// URLConfig is what a zmq+tcp:// or zmq+ipc:// URL says.
type URLConfig struct {
	Config
	// Mode is "bind", "connect", or "" (a publisher binds, a subscriber
	// connects).
	Mode      string
	Endpoints []string
}

// PublisherConfig is the Config of a publisher of the URL.
func (u URLConfig) PublisherConfig() Config {
	c := u.Config
	if u.Mode == "connect" {
		c.Connect = u.Endpoints
	} else {
		c.Bind = u.Endpoints
	}
	return c
}

// SubscriberConfig is the Config of a subscriber of the URL.
func (u URLConfig) SubscriberConfig() Config {
	c := u.Config
	if u.Mode == "bind" {
		c.Bind = u.Endpoints
	} else {
		c.Connect = u.Endpoints
	}
	return c
}

// ParseURL reads a zmq+tcp:// or zmq+ipc:// URL. Every error wraps
// transport.ErrBadURL and says what is wrong.
func ParseURL(u *url.URL) (URLConfig, error) {
	var uc URLConfig
	bad := func(format string, args ...any) (URLConfig, error) {
		return URLConfig{}, fmt.Errorf("%w: "+format, append([]any{transport.ErrBadURL}, args...)...)
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return bad("a zmq URL has no user, fragment or opaque part")
	}
	switch u.Scheme {
	case SchemeTCP:
		if u.Path != "" && u.Path != "/" {
			return bad("path %q: a zmq+tcp URL names HOST:PORT only", u.Path)
		}
		if u.Host == "" {
			return bad("no HOST:PORT")
		}
		for _, hp := range strings.Split(u.Host, ",") {
			e, err := parseEndpoint("tcp://" + hp)
			if err != nil {
				return bad("%q: want HOST:PORT", hp)
			}
			if _, err := strconv.ParseUint(e.addr[strings.LastIndexByte(e.addr, ':')+1:], 10, 16); err != nil {
				return bad("%q: port must be 0..65535", hp)
			}
			uc.Endpoints = append(uc.Endpoints, "tcp://"+hp)
		}
	case SchemeIPC:
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return bad("want zmq+ipc:///ABSOLUTE/PATH (three slashes)")
		}
		uc.Endpoints = []string{"ipc://" + u.Path}
	default:
		return bad("scheme %q is not %s or %s", u.Scheme, SchemeTCP, SchemeIPC)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("query %q: %v", u.RawQuery, err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(urlParams, k):
			return bad("unknown parameter %q (known: %s)", k, strings.Join(urlParams, ", "))
		case len(q[k]) > 1 && k != "subscribe":
			return bad("parameter %q given %d times", k, len(q[k]))
		}
	}
	c := &uc.Config
	switch m := q.Get("mode"); m {
	case "", "bind", "connect":
		uc.Mode = m
	default:
		return bad("mode=%q: want bind or connect", m)
	}
	for _, s := range q["subscribe"] {
		if len(s) > maxPrefix {
			return bad("subscribe=%q: a prefix is at most %d bytes", s, maxPrefix)
		}
		c.Subscribe = append(c.Subscribe, s)
	}
	uintIn := func(name string, lo, hi uint64) (uint64, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%w: %s=%q: want %d..%d", transport.ErrBadURL, name, v, lo, hi)
		}
		return n, nil
	}
	dur := func(name string, off bool) (time.Duration, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		if off && v == "off" {
			return -1, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%w: %s=%q: want a positive duration such as 500ms", transport.ErrBadURL, name, v)
		}
		return d, nil
	}
	frac := func(name string) (float64, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f < 1) {
			return 0, fmt.Errorf("%w: %s=%q: want a fraction in [0, 1)", transport.ErrBadURL, name, v)
		}
		return f, nil
	}
	var feed, hwm, maxmsg, maxpending, streamBytes uint64
	if feed, err = uintIn("feed", 1, 1<<32-1); err != nil {
		return URLConfig{}, err
	}
	c.Feed = uint32(feed)
	if hwm, err = uintIn("hwm", 1, 1<<24); err != nil {
		return URLConfig{}, err
	}
	c.SubscriberQueue, c.ReceiveQueue = int(hwm), int(hwm)
	if maxmsg, err = uintIn("maxmsg", 256, 1<<30); err != nil {
		return URLConfig{}, err
	}
	c.MaxMessageBytes = int(maxmsg)
	if maxpending, err = uintIn("maxpending", 256, 1<<40); err != nil {
		return URLConfig{}, err
	}
	if msgMax := cmp.Or(c.MaxMessageBytes, DefaultMaxMessageBytes); maxpending != 0 && int(maxpending) < msgMax {
		return bad("maxpending=%q: must be at least maxmsg (%d)", q.Get("maxpending"), msgMax)
	}
	c.MaxPendingBytes = int(maxpending)
	if streamBytes, err = uintIn("maxstreambytes", 1<<10, 1<<40); err != nil {
		return URLConfig{}, err
	}
	c.MaxStreamBytes = int(streamBytes)
	if c.Seed, err = uintIn("seed", 0, 1<<64-1); err != nil {
		return URLConfig{}, err
	}
	switch p := q.Get("pack"); p {
	case "", "off":
	case "on":
		c.Pack = true
	default:
		return bad("pack=%q: want on or off", p)
	}
	switch s := q.Get("slow"); s {
	case "", "drop":
	case "disconnect":
		c.Slow = Disconnect
	default:
		return bad("slow=%q: want drop or disconnect", s)
	}
	for _, d := range []struct {
		name string
		off  bool
		v    *time.Duration
	}{{"heartbeat", true, &c.Heartbeat}, {"linger", false, &c.Linger}, {"reconnect", false, &c.Reconnect},
		{"frametimeout", false, &c.FrameTimeout}, {"ping", false, &c.PingInterval}, {"pingtimeout", false, &c.PingTimeout},
		{"pingttl", false, &c.PingTTL},
	} {
		if *d.v, err = dur(d.name, d.off); err != nil {
			return URLConfig{}, err
		}
	}
	if c.PingTTL > maxPingTTL {
		return bad("pingttl=%q: must be at most 6553.5s (ZMTP's TTL is in tenths of a second, 16 bits)", q.Get("pingttl"))
	}
	if c.Reconnect > DefaultReconnectMax {
		c.ReconnectMax = c.Reconnect
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"loss", &c.Loss}, {"dup", &c.Duplicate}, {"reorder", &c.Reorder}} {
		if *f.v, err = frac(f.name); err != nil {
			return URLConfig{}, err
		}
	}
	return uc, nil
}

type urlEndpoint struct{ uc URLConfig }

func (e urlEndpoint) Publisher(ctx context.Context) (transport.Publisher, error) {
	p, err := NewPublisher(ctx, e.uc.PublisherConfig())
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (e urlEndpoint) Subscriber(ctx context.Context) (transport.Subscriber, error) {
	s, err := NewSubscriber(ctx, e.uc.SubscriberConfig())
	if err != nil {
		return nil, err
	}
	return s, nil
}

func openURL(_ context.Context, u *url.URL, o transport.Options) (transport.Endpoint, error) {
	uc, err := ParseURL(u)
	if err != nil {
		return nil, err
	}
	if o.Logger != nil {
		uc.Logger = o.Logger
	}
	return urlEndpoint{uc}, nil
}
