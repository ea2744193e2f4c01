package statsd

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestEtsyReadsEventsAsMetrics shows the difference README's "Where it
// differs from Etsy" describes: Etsy 0.9.0 reads a DogStatsD event and
// service check as metric segments, bad lines and a junk counter, where
// ours counts them apart; both count each line in metrics_received.
func TestEtsyReadsEventsAsMetrics(t *testing.T) {
	const packet = "_sc|my.check|0\n_e{5,4}:title|text|d:1700000000|h:host|p:low"
	sink := newGraphiteSink(t)
	e := startEtsy(t, map[string]any{"flushInterval": 1000, "graphiteHost": "127.0.0.1", "graphitePort": sink.port()},
		etsyRcvbufUntouched)
	sink.next(t, "Etsy") // the first flush: Etsy is up
	sendUDP(t, e.addr(), packet)
	etsy := map[string]float64{}
	for etsy["stats_counts.statsd.metrics_received"] < 2 {
		got, _ := sink.next(t, "Etsy")
		for _, name := range []string{"stats_counts.statsd.metrics_received", "stats_counts.statsd.bad_lines_seen", "stats_counts._e54"} {
			v, _ := strconv.ParseFloat(got[name], 64)
			etsy[name] += v
		}
	}
	if etsy["stats_counts.statsd.bad_lines_seen"] != 4 || etsy["stats_counts._e54"] != 1700000000 {
		t.Errorf("Etsy: %v, want 4 bad lines and a counter _e54 of 1700000000", etsy)
	}

	cfg := Config{}
	cfg.FlushInterval = time.Hour
	s := startServer(t, cfg)
	sendUDP(t, s.UDPAddrs()[0].String(), packet)
	waitReceived(t, s, 1, 2)
	snap := s.Flush(context.Background())
	ours := snapshotValues(snap)
	if _, ok := ours["c _e54"]; ok || ours["c statsd.bad_lines_seen"] != 0 || ours["c statsd.metrics_received"] != 2 ||
		snap.Server.EventsIgnored != 1 || snap.Server.ServiceChecksIgnored != 1 {
		t.Errorf("ours: %v, events %d, service checks %d; want no _e54, no bad line, 2 lines received, 1 event and 1 service check",
			ours, snap.Server.EventsIgnored, snap.Server.ServiceChecksIgnored)
	}
}
