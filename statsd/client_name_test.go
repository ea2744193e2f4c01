package statsd

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// nameCases are names, after a prefix, that the brokerless server's
// sanitizing (appendSanitized) empties or not.
var nameCases = []struct {
	prefix, name string
	empty        bool
}{
	{"", "", true},
	{"", "%%", true},
	{"", "é", true},             // outside the allowed set: dropped
	{"", "\xff\xfe", true},      // invalid UTF-8: dropped
	{"", "\u3001", true},        // ideographic comma: no whitespace
	{"", "a", false},            // the common case, decided at the first byte
	{"", "%%a", false},          // one kept character is enough
	{"", "/", false},            // '-'
	{"", ":|", false},           // the client writes "__"
	{"", "\u3000", false},       // ideographic space: '_'
	{"", "%\u00a0", false},      // no-break space: '_'
	{"%", "%", true},            // the prefix is sanitized too
	{"é", "", true},             // an empty name after a prefix the server empties
	{"%", "x", false},           //
	{"app.", "%%", false},       // a prefix kept keeps every name
	{"\xe3", "\x80\x80", false}, // prefix and name make U+3000 together
	{"\xe3", "\x80\x81", true},  // and U+3001 here
}

// A metric whose name, ClientConfig.Prefix included, the server's
// sanitizing would leave empty is dropped and counted at the call,
// whatever the call; any other is sent.
func TestClientRefusesNamesTheServerEmpties(t *testing.T) {
	calls := []struct {
		name  string
		lines int
		call  func(c *Client, name string)
	}{
		{"incr summed", 1, func(c *Client, n string) { c.Incr(n) }},
		{"count sampled", 1, func(c *Client, n string) { c.Sampled(0.5).Count(n, 2) }},
		{"timing", 1, func(c *Client, n string) { c.Timing(n, time.Millisecond) }},
		{"distribution", 1, func(c *Client, n string) { c.Distribution(n, 1) }},
		{"gauge negative", 2, func(c *Client, n string) { c.Gauge(n, -1) }},
		{"gauge delta", 1, func(c *Client, n string) { c.GaugeDelta(n, 1) }},
		{"set", 1, func(c *Client, n string) { c.Set(n, "x") }},
	}
	for _, nc := range nameCases {
		for _, call := range calls {
			t.Run(fmt.Sprintf("%q+%q/%s", nc.prefix, nc.name, call.name), func(t *testing.T) {
				srv := clientUDP(t)
				c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Prefix: nc.prefix,
					Shards: 1, FlushInterval: time.Hour})
				c.rand = func() uint64 { return 0 } // every sampled event is sent
				call.call(c, nc.name)
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				st := c.Stats()
				want := ClientStats{Lines: uint64(call.lines), Packets: 1}
				if nc.empty {
					want = ClientStats{Dropped: uint64(call.lines)}
				}
				if st.Dropped != want.Dropped || st.Lines != want.Lines || st.Packets != want.Packets {
					t.Fatalf("stats %+v, want %d dropped, %d lines in %d packets", st, want.Dropped, want.Lines, want.Packets)
				}
			})
		}
	}
}

// Against this package's server: the client sends no line the server
// counts as bad for names it would empty, and every line it refused is
// one the server would count as bad (sent by hand as the client would
// have written it).
func TestClientNamesAgreeWithServer(t *testing.T) {
	cfg := Config{}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	addr := s.UDPAddrs()[0].String()
	var sent, refused uint64
	var byHand []string
	for _, nc := range nameCases {
		c := newTestClient(t, ClientConfig{Addr: addr, Prefix: nc.prefix})
		c.Incr(nc.name)
		c.Close()
		st := c.Stats()
		if st.WriteErrors != 0 || st.Lines+st.Dropped != 1 {
			t.Fatalf("%q+%q: client stats %+v", nc.prefix, nc.name, st)
		}
		sent += st.Lines
		refused += st.Dropped
		if st.Dropped == 1 {
			byHand = append(byHand, string(appendClientClean([]byte(nc.prefix), nc.name, &clientReservedInName))+":1|c")
		}
	}
	sendUDP(t, addr, byHand...)
	waitMetrics(t, s, int(sent+refused))
	snap := s.Flush(context.Background())
	counters := map[string]float64{}
	for _, v := range snap.Counters {
		counters[v.Key] = v.Count
	}
	if got := counters["statsd.bad_lines_seen"]; got != float64(refused) || refused == 0 || sent == 0 {
		t.Errorf("bad_lines_seen %v: want the %d lines the client refused, sent by hand, and none of its %d", got, refused, sent)
	}
}
