package statsd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Limit-test keys: with prefix "app.", constant tag "env:prod" and call
// tag "t:1", the key as sent, "app.<name>;env:prod;t:1", is 17 bytes
// longer than the name.
const (
	limitPrefix  = "app."
	limitDefault = "env:prod"
	limitTag     = "t:1"
	limitExtra   = len(limitPrefix) + len(";"+limitDefault) + len(";"+limitTag)
)

// limitName is a name whose key, as sent, is MaxKeyLen+over bytes.
func limitName(over int) string { return strings.Repeat("k", MaxKeyLen-limitExtra+over) }

// limitTags returns n distinct call tags.
func limitTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%02d:v", i)
	}
	return tags
}

// A metric whose key is longer than MaxKeyLen, or that has more than
// MaxTags tags (the constant tags included), is dropped and counted at
// the call, whatever the call; one at the limit is sent.
func TestClientRefusesWhatTheServerWould(t *testing.T) {
	calls := []struct {
		name  string
		lines int // lines the call sends
		call  func(c *Client, name string, tags []string)
	}{
		{"incr summed", 1, func(c *Client, n string, tags []string) { c.Incr(n, tags...) }},
		{"count sampled", 1, func(c *Client, n string, tags []string) { c.Sampled(0.5).Count(n, 2, tags...) }},
		{"timing", 1, func(c *Client, n string, tags []string) { c.Timing(n, time.Millisecond, tags...) }},
		{"histogram", 1, func(c *Client, n string, tags []string) { c.Histogram(n, 1, tags...) }},
		{"gauge negative", 2, func(c *Client, n string, tags []string) { c.Gauge(n, -1, tags...) }},
		{"set", 1, func(c *Client, n string, tags []string) { c.Set(n, "x", tags...) }},
	}
	// 63 call tags and the constant tag are 64.
	tags63 := limitTags(MaxTags - 1)
	tags64 := limitTags(MaxTags)
	limits := []struct {
		name string
		key  string
		tags []string
		sent bool
	}{
		{"key at the limit", limitName(0), []string{limitTag}, true},
		{"key one byte over", limitName(1), []string{limitTag}, false},
		{"64 tags with the constant one", "m", tags63, true},
		{"65 tags with the constant one", "m", tags64, false},
	}
	for _, call := range calls {
		for _, lim := range limits {
			t.Run(call.name+"/"+lim.name, func(t *testing.T) {
				srv := clientUDP(t)
				c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Prefix: limitPrefix,
					Tags: []string{limitDefault, ""}, MaxPacketSize: 4096, Shards: 1, FlushInterval: time.Hour})
				c.rand = func() uint64 { return 0 } // every sampled event is sent
				call.call(c, lim.key, lim.tags)
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				st := c.Stats()
				if !lim.sent {
					if st.Dropped != uint64(call.lines) || st.Packets != 0 || st.Lines != 0 {
						t.Fatalf("stats %+v, want %d dropped and nothing sent", st, call.lines)
					}
					return
				}
				if st.Dropped != 0 || st.Packets != 1 || st.Lines != uint64(call.lines) {
					t.Fatalf("stats %+v, want %d lines sent", st, call.lines)
				}
				got := readClientPacket(t, srv)
				if want := limitPrefix + lim.key + ":"; !strings.HasPrefix(got, want) {
					t.Fatalf("sent %.40q…, want it to start with %.40q…", got, want)
				}
			})
		}
	}
}

// What the client sends at the limits this package's server takes, with
// and without sanitizing, and the lines it refuses are lines the server
// would count as bad: the client measures what the server measures.
func TestClientLimitsAgreeWithServer(t *testing.T) {
	for _, noSanitize := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSanitize=%v", noSanitize), func(t *testing.T) {
			cfg := Config{NoSanitize: noSanitize}
			cfg.FlushInterval = time.Hour
			s := startServer(t, cfg)
			addr := s.UDPAddrs()[0].String()
			c := newTestClient(t, ClientConfig{Addr: addr, Prefix: limitPrefix, Tags: []string{limitDefault},
				MaxPacketSize: 4096})
			c.Incr(limitName(0), limitTag)
			c.Gauge("tags", 5, limitTags(MaxTags-1)...)
			c.Incr(limitName(1), limitTag)
			c.Gauge("tags", 5, limitTags(MaxTags)...)
			c.Close()
			st := c.Stats()
			if st.Dropped != 2 || st.Lines != 2 || st.WriteErrors != 0 {
				t.Fatalf("client stats %+v, want 2 lines sent and 2 dropped", st)
			}
			// The two refused lines, as the client would have written them.
			sendUDP(t, addr,
				limitPrefix+limitName(1)+":1|c|#"+limitDefault+","+limitTag,
				"app.tags:5|g|#"+limitDefault+","+strings.Join(limitTags(MaxTags), ","))
			waitMetrics(t, s, int(st.Lines)+2)
			snap := s.Flush(context.Background())

			counters := map[string]float64{}
			for _, v := range snap.Counters {
				counters[v.Key] = v.Count
			}
			if got := counters["statsd.bad_lines_seen"]; got != 2 {
				t.Errorf("bad_lines_seen %v, want the 2 lines sent by hand", got)
			}
			wantKey := limitPrefix + limitName(0) + ";env=prod;t=1"
			if len(wantKey) != MaxKeyLen || counters[wantKey] != 1 {
				t.Errorf("no counter of %d bytes at the limit: counters %.200v", len(wantKey), counters)
			}
			if len(snap.Gauges) != 1 || strings.Count(snap.Gauges[0].Key, ";") != MaxTags || snap.Gauges[0].Value != 5 {
				t.Errorf("gauges %+v, want one with %d tags", snap.Gauges, MaxTags)
			}
		})
	}
}

// A configuration whose constant tags alone exceed MaxTags, or whose
// prefix and tags leave no room for a name in MaxKeyLen, is refused.
func TestClientConfigLimits(t *testing.T) {
	many := limitTags(MaxTags + 1)
	many[0] = "" // an empty tag is no tag: 64 left
	cases := []struct {
		name string
		cfg  ClientConfig
		ok   bool
	}{
		{"64 tags", ClientConfig{Tags: many}, true},
		{"65 tags", ClientConfig{Tags: limitTags(MaxTags + 1)}, false},
		{"room for a 1-byte name", ClientConfig{Prefix: strings.Repeat("p", MaxKeyLen-1-len(";x")), Tags: []string{"x"}}, true},
		{"no room for a name", ClientConfig{Prefix: strings.Repeat("p", MaxKeyLen-len(";x")), Tags: []string{"x"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Addr = "127.0.0.1:8125"
			cfg.setDefaults()
			if err := cfg.validate(); (err == nil) != tc.ok {
				t.Fatalf("validate: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
