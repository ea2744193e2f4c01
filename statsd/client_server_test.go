package statsd

import (
	"context"
	"testing"
	"time"
)

// The client against this package's server, over UDP with sequence
// lines: the server reads every kind of line the client writes with the
// right values, and accounts for every packet, none lost.
func TestClientToServer(t *testing.T) {
	cfg := Config{}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	c := newTestClient(t, ClientConfig{Addr: s.UDPAddrs()[0].String(), Prefix: "cl.", MaxPacketSize: 256,
		Sequence: true, ClientID: "e2e"})
	c.rand = func() uint64 { return 0 } // every sampled event is sent
	for i := range 1000 {
		c.Incr("hits")
		c.Count("sampled", 1, 0.5)
		if i < 200 {
			c.Timing("lat", time.Duration(i)*time.Millisecond, "route:/api")
		}
	}
	c.Gauge("temp", -3)
	c.GaugeDelta("temp", 1.5)
	for _, u := range []string{"alice", "bob", "alice"} {
		c.Set("users", u)
	}
	c.Close()
	st := c.Stats()
	if st.Dropped != 0 || st.WriteErrors != 0 || st.Packets < 10 {
		t.Fatalf("client stats %+v", st)
	}
	waitMetrics(t, s, int(st.Lines+st.Packets))
	snap := s.Flush(context.Background())

	counters := map[string]float64{}
	for _, v := range snap.Counters {
		counters[v.Key] = v.Count
	}
	if counters["cl.hits"] != 1000 || counters["cl.sampled"] != 2000 || counters["statsd.bad_lines_seen"] != 0 {
		t.Errorf("counters %v", counters)
	}
	gauges := map[string]float64{}
	for _, v := range snap.Gauges {
		gauges[v.Key] = v.Value
	}
	if gauges["cl.temp"] != -1.5 {
		t.Errorf("gauges %v", gauges)
	}
	sets := map[string]int{}
	for _, v := range snap.Sets {
		sets[v.Key] = v.Count
	}
	if sets["cl.users"] != 2 {
		t.Errorf("sets %v", sets)
	}
	timers := map[string]float64{}
	for _, v := range snap.Timers {
		for _, st := range v.Stats {
			timers[v.Key+"."+st.Name] = st.Value
		}
	}
	if len(snap.Timers) != 1 || timers[snap.Timers[0].Key+".count"] != 200 || timers[snap.Timers[0].Key+".upper"] != 199 {
		t.Errorf("timers %v", timers)
	}
	if len(snap.Server.Clients) != 1 {
		t.Fatalf("loss accounting %+v, want one client", snap.Server.Clients)
	}
	if l := snap.Server.Clients[0]; l.ID != "e2e" || l.Received != st.Packets || l.Lost != 0 {
		t.Errorf("loss accounting %+v, want %d packets received, none lost", l, st.Packets)
	}
}
