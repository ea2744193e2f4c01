package multicast

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/reliable"
	"github.com/brokerless/brokerless/transport"
)

func TestParseURL(t *testing.T) {
	key := filepath.Join(t.TempDir(), "feed.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("mcast://239.1.2.3:7000?iface=lo&feed=9&ttl=0&repairs=unicast&offload=off&join=earliest&mtu=512" +
		"&rcvbuf=65536&sndbuf=131072&linger=50ms&spin=50us&loss=0.05&seed=4&keyfile=" + url.QueryEscape(key))
	cfg, err := ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Group.String() != "239.1.2.3:7000" || cfg.Interface != "lo" || cfg.Feed != 9 || !cfg.HostOnly || cfg.TTL != 0 ||
		!cfg.UnicastRepairs || !cfg.NoOffload || cfg.Receiver.Join != reliable.JoinEarliest || cfg.Sender.MTU != 512 ||
		cfg.RecvBuffer != 65536 || cfg.SendBuffer != 131072 || cfg.CloseLinger != 50*time.Millisecond ||
		cfg.Spin != 50*time.Microsecond ||
		string(cfg.Key) != "0123456789abcdef0123456789abcdef" || cfg.Filter == nil {
		t.Fatalf("%+v", cfg)
	}
	if dropped := filterDrops(t, cfg.Filter, 10_000); dropped < 400 || dropped > 600 {
		t.Fatalf("loss=0.05 dropped %d of 10000 datagrams", dropped)
	}
	u, _ = url.Parse("mcast://239.1.2.3:7000")
	if cfg, err = ParseURL(u); err != nil {
		t.Fatal(err)
	}
	if cfg.Filter != nil || cfg.TTL != 0 || cfg.HostOnly || cfg.NoOffload || cfg.Feed != 0 || cfg.Receiver.Join != reliable.JoinLive {
		t.Fatalf("a bare URL set %+v", cfg)
	}
}

// TestBadURLs: each bad mcast:// URL gets one error, wrapping
// transport.ErrBadURL, that names what is wrong; from ParseURL and from
// transport.Open alike.
func TestBadURLs(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	const g = "mcast://239.1.2.3:7000"
	tests := []struct{ url, want string }{
		{"mcast://10.0.0.1:7000", "group 10.0.0.1 is not a multicast address"},
		{"mcast://127.0.0.1:7000?iface=lo&ttl=0", "group 127.0.0.1 is not a multicast address"},
		{"mcast://239.1.2.3", `group "239.1.2.3": want an IPv4 multicast address and a port`},
		{"mcast://feeds.example:7000", `group "feeds.example:7000": want an IPv4 multicast address`},
		{"mcast://[ff02::1]:7000", "group ff02::1: multicast here is IPv4"},
		{"mcast://239.1.2.3:0", "group 239.1.2.3:0: want a port from 1 to 65535"},
		{"mcast://", "no group"},
		{"mcast:239.1.2.3:7000", `"239.1.2.3:7000": want mcast://GROUP:PORT`},
		{"mcast://me@239.1.2.3:7000", "takes no user"},
		{g + "/ticks", `takes no path ("/ticks")`},
		{g + "/", `takes no path ("/")`},
		{g + "#x", "takes no fragment"},
		{g + "?offload=no", "offload"},
		{g + "?a=%zz", "query"},
		{g + "?bogus=1", `unknown parameter "bogus" (mcast:// takes iface, feed, ttl`},
		{g + "?TTL=1", `unknown parameter "TTL"`},
		{g + "?from=earliest", `from="earliest": multicast does not replay`},
		{g + "?from=1000&join=earliest", "replay from a position needs an archive"},
		{g + "?ttl=1&ttl=2", "ttl given 2 times"},
		{g + "?ttl=", "ttl= has no value"},
		{g + "?ttl=256", `ttl="256": want an integer from 0 to 255`},
		{g + "?ttl=x", `ttl="x": want an integer`},
		{g + "?feed=0", `feed="0": want an integer from 1 to 4294967295`},
		{g + "?feed=4294967296", `feed="4294967296"`},
		{g + "?mtu=100", `mtu="100": want an integer from 256 to 65507`},
		{g + "?mtu=65508", `mtu="65508"`},
		{g + "?rcvbuf=0", `rcvbuf="0": want an integer from 1`},
		{g + "?sndbuf=-1", `sndbuf="-1"`},
		{g + "?linger=0", `linger="0": want a positive duration`},
		{g + "?linger=-1s", `linger="-1s"`},
		{g + "?linger=soon", `linger="soon"`},
		{g + "?spin=2s", `spin="2s": want at most 1s`},
		{g + "?spin=0", `spin="0": want a positive duration`},
		{g + "?loss=2", `loss="2": want a probability from 0 to 1`},
		{g + "?dup=-0.1", `dup="-0.1"`},
		{g + "?reorder=NaN", `reorder="NaN"`},
		{g + "?seed=3", `seed="3": needs loss, dup or reorder`},
		{g + "?loss=0.1&seed=-1", `seed="-1"`},
		{g + "?repairs=maybe", `repairs="maybe": want multicast or unicast`},
		{g + "?join=first", `join="first": want live or earliest`},
		{g + "?keyfile=" + url.QueryEscape(filepath.Join(dir, "none")), "keyfile="},
		{g + "?keyfile=" + url.QueryEscape(short), "want at least 16"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		_, err = ParseURL(u)
		checkBadURL(t, "ParseURL", tt.url, err, tt.want)
		_, err = transport.Open(context.Background(), tt.url)
		if !errors.Is(err, transport.ErrBadURL) {
			t.Errorf("transport.Open(%s): %v, want an error wrapping ErrBadURL", tt.url, err)
		}
	}
	// What only Open checks: the interface exists.
	_, err := transport.Open(context.Background(), g+"?iface=nosuch0")
	checkBadURL(t, "transport.Open", g+"?iface=nosuch0", err, `iface="nosuch0": no such network interface`)
}

func checkBadURL(t *testing.T, fn, raw string, err error, want string) {
	t.Helper()
	switch {
	case !errors.Is(err, transport.ErrBadURL):
		t.Errorf("%s(%s): %v, want an error wrapping ErrBadURL", fn, raw, err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s(%s): %q, want it to say %q", fn, raw, err, want)
	case strings.Contains(err.Error(), "\n"):
		t.Errorf("%s(%s): %q is more than one line", fn, raw, err)
	}
}

// filterDrops pushes n datagrams through a filter newFilter makes and
// counts those it does not keep.
func filterDrops(t *testing.T, newFilter func() (DatagramFilter, error), n int) int {
	t.Helper()
	f, err := newFilter()
	if err != nil {
		t.Fatal(err)
	}
	now, dropped := time.Now(), 0
	for range n {
		if !f.Push(now, []byte("datagram"), netip.MustParseAddrPort("127.0.0.1:9")) {
			dropped++
		}
		for {
			if _, _, ok := f.Pop(now); !ok {
				break
			}
		}
	}
	return dropped
}

// TestOpenURLLogger: a feed opened by URL logs to the logger given to
// transport.Open (no URL parameter can name one): a receive buffer the
// kernel clamps is said there.
func TestOpenURLLogger(t *testing.T) {
	limit, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Skipf("no rmem_max to exceed: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(limit)))
	if err != nil || n >= 1<<30 {
		t.Skipf("rmem_max %q: a 1 GiB buffer may not be clamped", limit)
	}
	ctx := context.Background()
	w := &warnings{}
	group := fmt.Sprintf("239.255.%d.%d:%d", rand.IntN(256), 1+rand.IntN(254), 20000+rand.IntN(12768))
	ep, err := transport.Open(ctx, "mcast://"+group+"?iface=lo&ttl=0&rcvbuf=1073741824", transport.WithLogger(slog.New(w)))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := ep.Subscriber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if w.count("kernel clamped the receive buffer") == 0 {
		t.Fatalf("the logger given to transport.Open got %q, not the clamped buffer's warning", w.msgs)
	}
}
