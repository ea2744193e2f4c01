package statsd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientUDP returns a UDP socket on 127.0.0.1 for a client to send to.
func clientUDP(t testing.TB) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// clientUnixgram returns a unix datagram socket in a temporary
// directory.
func clientUnixgram(t testing.TB) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "statsd.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// fillUnixgram fills srv's receive queue from another socket, so that
// the next write to it blocks.
func fillUnixgram(t testing.TB, srv *net.UnixConn) {
	t.Helper()
	c, err := net.Dial("unixgram", srv.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; ; i++ {
		if i == 1_000_000 {
			t.Fatal("a unix datagram socket nobody reads took 1,000,000 datagrams")
		}
		c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Write([]byte("x:1|c")); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			return
		}
	}
}

func newTestClient(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	c, err := NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readClientPacket reads one datagram, waiting at most 5 s.
func readClientPacket(t testing.TB, conn net.Conn) string {
	t.Helper()
	buf := make([]byte, maxClientPacketSize)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no packet: %v", err)
	}
	return string(buf[:n])
}

func TestClientWire(t *testing.T) {
	sampledIn := func() uint64 { return 0 }
	sampledOut := func() uint64 { return math.MaxUint64 }
	cases := []struct {
		name string
		cfg  ClientConfig
		rand func() uint64
		call func(c *Client)
		want string // "" when nothing is sent
	}{
		{name: "incr", call: func(c *Client) { c.Incr("hits") }, want: "hits:1|c"},
		{name: "incr tags", call: func(c *Client) { c.Incr("hits", "a:b", "c") }, want: "hits:1|c|#a:b,c"},
		{name: "count", call: func(c *Client) { c.Count("hits", 42, 1) }, want: "hits:42|c"},
		{name: "count negative", call: func(c *Client) { c.Count("hits", -3, 1) }, want: "hits:-3|c"},
		{name: "count rate above 1", call: func(c *Client) { c.Count("hits", 2, 7) }, want: "hits:2|c"},
		{name: "count sampled in", rand: sampledIn, call: func(c *Client) { c.Count("hits", 5, 0.5, "k:v") }, want: "hits:5|c|@0.5|#k:v"},
		{name: "count sampled out", rand: sampledOut, call: func(c *Client) { c.Count("hits", 5, 0.5) }},
		{name: "count rate 0", rand: sampledIn, call: func(c *Client) { c.Count("hits", 5, 0) }},
		{name: "count rate NaN", rand: sampledIn, call: func(c *Client) { c.Count("hits", 5, math.NaN()) }},
		{name: "count tiny rate", rand: sampledIn, call: func(c *Client) { c.Count("hits", 1, 1e-7) }, want: "hits:1|c|@0.0000001"},
		{name: "gauge", call: func(c *Client) { c.Gauge("temp", 21.5) }, want: "temp:21.5|g"},
		{name: "gauge integer", call: func(c *Client) { c.Gauge("temp", 3) }, want: "temp:3|g"},
		{name: "gauge huge", call: func(c *Client) { c.Gauge("temp", 1e21) }, want: "temp:1e+21|g"},
		{name: "gauge tiny", call: func(c *Client) { c.Gauge("temp", 1.5e-7) }, want: "temp:1.5e-07|g"},
		{name: "gauge negative", call: func(c *Client) { c.Gauge("temp", -4, "k:v") }, want: "temp:0|g|#k:v\ntemp:-4|g|#k:v"},
		{name: "gauge NaN", call: func(c *Client) { c.Gauge("temp", math.NaN()) }},
		{name: "gauge delta up", call: func(c *Client) { c.GaugeDelta("temp", 3) }, want: "temp:+3|g"},
		{name: "gauge delta down", call: func(c *Client) { c.GaugeDelta("temp", -2.5) }, want: "temp:-2.5|g"},
		{name: "gauge delta inf", call: func(c *Client) { c.GaugeDelta("temp", math.Inf(1)) }},
		{name: "timing", call: func(c *Client) { c.Timing("rt", 1500*time.Microsecond) }, want: "rt:1.5|ms"},
		{name: "timing seconds", call: func(c *Client) { c.Timing("rt", 2*time.Second) }, want: "rt:2000|ms"},
		{name: "timing nanosecond", call: func(c *Client) { c.Timing("rt", time.Nanosecond) }, want: "rt:0.000001|ms"},
		{name: "timing negative", call: func(c *Client) { c.Timing("rt", -1010*time.Microsecond) }},
		{name: "timing sampled", rand: sampledIn, call: func(c *Client) { c.Sampled(0.25).Timing("rt", 3*time.Millisecond, "a") }, want: "rt:3|ms|@0.25|#a"},
		{name: "timing sampled out", rand: sampledOut, call: func(c *Client) { c.Sampled(0.25).Timing("rt", 3*time.Millisecond) }},
		{name: "histogram", call: func(c *Client) { c.Histogram("size", 0.25) }, want: "size:0.25|h"},
		{name: "histogram sampled", rand: sampledIn, call: func(c *Client) { c.Sampled(0.1).Histogram("size", 2) }, want: "size:2|h|@0.1"},
		{name: "distribution", call: func(c *Client) { c.Distribution("size", 7, "x:y") }, want: "size:7|d|#x:y"},
		{name: "distribution sampled", rand: sampledIn, call: func(c *Client) { c.Sampled(0.5).Distribution("size", 1) }, want: "size:1|d|@0.5"},
		{name: "sampled incr", rand: sampledIn, call: func(c *Client) { c.Sampled(0.5).Incr("hits") }, want: "hits:1|c|@0.5"},
		{name: "sampled count", rand: sampledIn, call: func(c *Client) { c.Sampled(0.5).Count("hits", 9) }, want: "hits:9|c|@0.5"},
		{name: "set", call: func(c *Client) { c.Set("users", "alice") }, want: "users:alice|s"},
		{name: "set reserved", call: func(c *Client) { c.Set("users", "a:b|c\nd") }, want: "users:a_b_c_d|s"},
		{name: "name reserved", call: func(c *Client) { c.Incr("a:b|c\nd") }, want: "a_b_c_d:1|c"},
		{name: "tag reserved", call: func(c *Client) { c.Incr("hits", "k:v,w|z\n") }, want: "hits:1|c|#k:v_w_z_"},
		{name: "empty tags", call: func(c *Client) { c.Incr("hits", "", "a", "") }, want: "hits:1|c|#a"},
		{
			name: "prefix and default tags",
			cfg:  ClientConfig{Prefix: "app.", Tags: []string{"env:prod", "", "r|s"}},
			call: func(c *Client) { c.Incr("hits", "a:b") },
			want: "app.hits:1|c|#env:prod,r_s,a:b",
		},
		{
			name: "default tags only",
			cfg:  ClientConfig{Tags: []string{"env:prod"}},
			call: func(c *Client) { c.Incr("hits", "") },
			want: "hits:1|c|#env:prod",
		},
		{
			name: "several lines",
			call: func(c *Client) { c.Incr("a"); c.Gauge("b", 2); c.Set("c", "x") },
			want: "a:1|c\nb:2|g\nc:x|s",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := clientUDP(t)
			cfg := tc.cfg
			cfg.Addr, cfg.Shards, cfg.FlushInterval, cfg.CounterKeys = srv.LocalAddr().String(), 1, time.Hour, -1
			c := newTestClient(t, cfg)
			if tc.rand != nil {
				c.rand = tc.rand
			}
			tc.call(c)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if tc.want == "" {
				if st.Packets != 0 {
					t.Fatalf("sent %d packets, want none", st.Packets)
				}
				return
			}
			if got := readClientPacket(t, srv); got != tc.want {
				t.Fatalf("sent %q, want %q", got, tc.want)
			}
			wantLines := uint64(strings.Count(tc.want, "\n") + 1)
			if st.Packets != 1 || st.Lines != wantLines || st.Bytes != uint64(len(tc.want)) || st.Dropped != 0 {
				t.Fatalf("stats %+v, want 1 packet of %d lines, %d bytes", st, wantLines, len(tc.want))
			}
		})
	}
}

// Values no server reads are dropped and counted: NaN, infinities,
// negative durations (Etsy's is_valid_packet and this package's server
// reject a negative timer), and lines without a name (a bad line to the
// brokerless server).
func TestClientDropsUnreadable(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String()})
	c.rand = func() uint64 { return 0 }
	c.Gauge("g", math.NaN())
	c.GaugeDelta("g", math.Inf(-1))
	c.Histogram("h", math.Inf(1))
	c.Distribution("d", math.NaN())
	c.Timing("t", -time.Nanosecond)
	c.Sampled(0.5).Timing("t", math.MinInt64)
	c.Incr("")
	c.Gauge("", -1)
	c.Set("", "x")
	c.Close()
	if st := c.Stats(); st.Dropped != 10 || st.Packets != 0 {
		t.Fatalf("stats %+v, want 10 dropped and nothing sent", st)
	}
}

func TestClientConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  ClientConfig
	}{
		{"no addr", ClientConfig{}},
		{"network", ClientConfig{Addr: "x", Network: "ip"}},
		{"packet too small", ClientConfig{Addr: "x", MaxPacketSize: 64}},
		{"packet too large", ClientConfig{Addr: "x", MaxPacketSize: 70000}},
		{"negative interval", ClientConfig{Addr: "x", FlushInterval: -1}},
		{"negative timeout", ClientConfig{Addr: "x", WriteTimeout: -1}},
		{"queue below a packet", ClientConfig{Addr: "x", QueueBytes: 1000}},
		{"queue too large", ClientConfig{Addr: "x", QueueBytes: 2 << 30}},
		{"negative shards", ClientConfig{Addr: "x", Shards: -1}},
		{"too many shards", ClientConfig{Addr: "x", Shards: 5000}},
		{"counter keys", ClientConfig{Addr: "x", CounterKeys: -2}},
		{"bad client id", ClientConfig{Addr: "x", Sequence: true, ClientID: "a b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(context.Background(), tc.cfg)
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("err %v, want ErrBadConfig", err)
			}
		})
	}
}

func TestClientConfigDefaults(t *testing.T) {
	cfg := ClientConfig{Addr: "127.0.0.1:8125", Sequence: true}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Network != "udp" || cfg.MaxPacketSize != 1432 || cfg.FlushInterval != 100*time.Millisecond ||
		cfg.QueueBytes != 256<<10 || cfg.Shards < 1 || cfg.WriteTimeout != time.Second || cfg.CounterKeys != 1024 || cfg.Logger == nil ||
		CheckClientID(cfg.ClientID) != nil {
		t.Fatalf("defaults %+v", cfg)
	}
}

func TestClientDialError(t *testing.T) {
	_, err := NewClient(context.Background(), ClientConfig{Network: "unixgram", Addr: filepath.Join(t.TempDir(), "none")})
	if err == nil {
		t.Fatal("dialled a socket that does not exist")
	}
}

func TestClientCloseTwiceAndAfter(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String()})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Incr("late")
	c.Gauge("late", -1)
	if st := c.Stats(); st.Dropped != 3 || st.Packets != 0 {
		t.Fatalf("stats %+v, want 3 lines dropped after Close", st)
	}
}

// Flush writes what was recorded before it, summed counters included,
// before it returns; after Close it says so.
func TestClientFlush(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Shards: 1, FlushInterval: time.Hour,
		MaxPacketSize: 128, QueueBytes: 2100 * 128, CounterKeys: 4096})
	c.Incr("a")
	c.Gauge("g", 1)
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Packets != 1 || st.Lines != 2 {
		t.Fatalf("stats %+v after Flush, want 1 packet of 2 lines", st)
	}
	if got := readClientPacket(t, srv); got != "g:1|g\na:1|c" {
		t.Fatalf("got %q", got)
	}
	if err := c.Flush(context.Background()); err != nil { // nothing to send
		t.Fatal(err)
	}
	// Enough summed counters to make 2000 packets, which the flush
	// queues: Flush returns once all are written.
	const counters = 2000
	for i := range counters {
		c.Incr(fmt.Sprintf("a.counter.with.a.name.long.enough.to.fill.more.than.half.of.a.packet.%04d", i))
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Packets != 1+counters || st.Lines != 2+counters || st.Dropped != 0 {
		t.Fatalf("stats %+v after Flush, want %d packets", st, 1+counters)
	}
	c.Close()
	if err := c.Flush(context.Background()); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
}

// Flush gives up when its context is done: here the sender is stuck
// writing to a unix datagram socket nobody reads, filled before the
// client writes. First the sender takes the flush and gets stuck
// writing it; then, stuck, it cannot take the next flush. (Without the
// socket filled first, the client's packets went through under -race,
// and the flush ended before its context did.)
func TestClientFlushHonoursContext(t *testing.T) {
	srv := clientUnixgram(t)
	fillUnixgram(t, srv)
	c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Shards: 1,
		MaxPacketSize: 128, QueueBytes: 2 * 128, FlushInterval: time.Hour, WriteTimeout: time.Minute, CounterKeys: -1})
	flush := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() { done <- c.Flush(ctx) }()
		return done
	}
	c.Incr("abcdefghij") // buffered in its shard: the sender waits
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel) // after Flush began to wait, most likely
		select {
		case err := <-flush(ctx):
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Flush %d: %v, want context.Canceled", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Flush %d: still waiting 10 s after its context ended", i)
		}
		if err := c.Flush(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Flush with a done context: %v", err)
		}
	}
	srv.Close() // the blocked write fails
}
