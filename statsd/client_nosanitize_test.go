package statsd

import (
	"context"
	"testing"
	"time"
)

// A server with NoSanitize keeps names as written, so it takes a name
// its sanitizing would have emptied ("温度", "%%", "é"; a statsd_exporter
// mapping can name such a metric too). A client told so
// (ClientConfig.NoSanitize) sends them, and refuses only the empty
// name; by default it refuses them all, as the sanitizing server would
// (TestClientRefusesNamesTheServerEmpties).
func TestClientNoSanitizeSendsWhatTheServerKeeps(t *testing.T) {
	cfg := Config{NoSanitize: true}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	addr := s.UDPAddrs()[0].String()
	cases := []struct {
		prefix, name string
		sent         bool
	}{
		{"", "温度", true},
		{"", "%%", true},
		{"", "é", true},
		{"é", "", true},
		{"", "", false},
	}
	var sent int
	for _, nc := range cases {
		for _, noSanitize := range []bool{false, true} {
			c := newTestClient(t, ClientConfig{Addr: addr, Prefix: nc.prefix, NoSanitize: noSanitize})
			c.Incr(nc.name)
			c.Close()
			st := c.Stats()
			want := nc.sent && noSanitize
			if (st.Lines == 1) != want || st.Lines+st.Dropped != 1 || st.WriteErrors != 0 {
				t.Errorf("%q+%q, NoSanitize %v: stats %+v, want sent %v", nc.prefix, nc.name, noSanitize, st, want)
			}
			sent += int(st.Lines)
		}
	}
	waitMetrics(t, s, sent)
	snap := s.Flush(context.Background())
	counters := map[string]float64{}
	for _, v := range snap.Counters {
		counters[v.Key] = v.Count
	}
	for key, want := range map[string]float64{"温度": 1, "%%": 1, "é": 2} { // "é" as a name and as a prefix
		if counters[key] != want {
			t.Errorf("counter %q: %v, want %v (counters %v)", key, counters[key], want, counters)
		}
	}
	if got := counters["statsd.bad_lines_seen"]; got != 0 {
		t.Errorf("bad_lines_seen %v, want 0", got)
	}
}
