package statsd

import (
	"sort"
	"strings"
)

// promLoss are the server's own counters on Prometheus: cumulative
// "statsd_server_<name>_total", each with what it counts.
var promLoss = []struct {
	name, help string
	v          func(*ServerStats) uint64
}{
	{"kernel_drops", "Datagrams the kernel dropped on the server's UDP sockets, their receive buffers full (/proc/net/udp).", func(s *ServerStats) uint64 { return s.Listen.KernelDrops }},
	{"keys_rejected", "Values for new keys dropped because MaxKeys keys were held.", func(s *ServerStats) uint64 { return s.Dropped.Keys }},
	{"keys_evicted", "Idle keys forgotten to make room at MaxKeys.", func(s *ServerStats) uint64 { return s.KeysEvicted }},
	{"timer_samples_dropped", "Timer values dropped over MaxTimerSamples in one interval.", func(s *ServerStats) uint64 { return s.Dropped.TimerSamples }},
	{"set_members_dropped", "Set members dropped over MaxSetMembers in one interval.", func(s *ServerStats) uint64 { return s.Dropped.SetMembers }},
	{"truncated", "Datagrams longer than the read buffer, cut.", func(s *ServerStats) uint64 { return s.Listen.Truncated }},
	{"lines_too_long", "TCP lines longer than MaxLineLength, discarded.", func(s *ServerStats) uint64 { return s.Listen.LinesTooLong }},
	{"read_errors", "Failed socket reads and TCP accepts.", func(s *ServerStats) uint64 { return s.Listen.ReadErrors }},
	{"conns_evicted", "TCP connections closed to admit a new one while MaxConns were open: each the one idle the longest.", func(s *ServerStats) uint64 { return s.Listen.EvictedConns }},
	{"conns_idle_closed", "TCP connections closed after IdleTimeout without a byte.", func(s *ServerStats) uint64 { return s.Listen.IdleConns }},
	{"repeated", "Packets the repeaters forwarded.", func(s *ServerStats) uint64 { return s.Listen.Repeated }},
	{"repeat_dropped", "Packets the repeaters dropped (queue full or send failed).", func(s *ServerStats) uint64 { return s.Listen.RepeatDropped }},
	{"seq_lines", "Sequence lines received from clients that number their packets.", func(s *ServerStats) uint64 { return s.SeqLines }},
	{"negative_increments", "StatsD counter values below zero: left out of the Prometheus counters, which never decrease (statsd_exporter's illegal_negative_counter); the other outputs add them, as Etsy does.", func(s *ServerStats) uint64 { return s.NegativeCounterValues }},
	{"clients_rejected", "Sequence lines of new clients dropped because MaxClients were tracked.", func(s *ServerStats) uint64 { return s.Dropped.Clients }},
	{"events_ignored", "DogStatsD events received (_e{...}): not metrics, counted only, as the server has no events backend; a malformed one is a bad line.", func(s *ServerStats) uint64 { return s.EventsIgnored }},
	{"service_checks_ignored", "DogStatsD service checks received (_sc|...): not metrics, counted only, as the server has no service-check backend; a malformed one is a bad line.", func(s *ServerStats) uint64 { return s.ServiceChecksIgnored }},
}

// promClient are the per-client counters of the clients that number
// their packets.
var promClient = []struct {
	name, help string
}{
	{"packets_received", "Packets of a client that numbers them, received."},
	{"packets_lost", "Packets of a client that numbers them, never received."},
	{"packets_reordered", "Packets of a client that numbers them, received late but within the window."},
	{"packets_duplicated", "Packets of a client that numbers them, received twice."},
	{"restarts", "Times a client that numbers its packets restarted under the same id."},
}

// etsyHelp describes Etsy statsd's counters of the server itself.
var etsyHelp = map[string]string{
	"packets_received": "Packets received (Etsy statsd's packets_received).",
	"metrics_received": "Lines received (Etsy statsd's metrics_received).",
	"bad_lines_seen":   "Values rejected as bad lines (Etsy statsd's bad_lines_seen).",
}

// renderSelf adds the server's own families to the page: they claim
// their names before any of the user's.
func (p *Prometheus) renderSelf(pg *page, s *Snapshot) {
	v := &s.Server
	counter := func(name, help, labels string, delta uint64) {
		f := pg.family(name, promCounter, help, true)
		id := name + "\x00" + labels
		p.self[id] += float64(delta)
		f.add(labels, p.self[id])
	}
	for _, c := range s.Counters {
		if c.Own {
			i := strings.LastIndexByte(c.Key, '.')
			name := escapeName(c.Key) + "_total"
			f := pg.family(name, promCounter, etsyHelp[c.Key[i+1:]], true)
			id := name + "\x00"
			p.self[id] += c.Count
			f.add("", p.self[id])
		}
	}
	for _, g := range s.Gauges {
		if g.Own {
			name := escapeName(g.Key) + "_seconds"
			pg.family(name, promGauge, "Time between the last two flushes beyond the flush interval (Etsy statsd's timestamp_lag).", true).add("", g.Value)
		}
	}
	pg.family("statsd_server_flush_duration_seconds", promGauge, "Duration of the previous flush, backends included.", true).
		add("", v.LastFlushDuration.Seconds())
	keys := pg.family("statsd_server_keys", promGauge, "Keys held, by type.", true)
	keys.add(`type="counter"`, float64(v.Keys.Counters))
	keys.add(`type="gauge"`, float64(v.Keys.Gauges))
	keys.add(`type="set"`, float64(v.Keys.Sets))
	keys.add(`type="timer"`, float64(v.Keys.Timers))
	for _, l := range promLoss {
		counter("statsd_server_"+l.name+"_total", l.help, "", l.v(v))
	}
	p.byBackend(pg, "statsd_server_backend_errors_total", "Failed flushes, by backend.", "backend\x00", v.BackendErrors)
	p.byBackend(pg, "statsd_server_backend_lines_lost_total",
		"JSON lines a backend lost, never written: the log backend's lines the log did not take or failed, the console's lines of flushes dropped while its writer was blocked or that failed.", "lines_lost\x00", v.BackendLinesLost)
	p.renderClients(pg, v)
	pg.family("statsd_server_nonfinite_increments_total", promCounter,
		"Increments of StatsD counters, and intervals of timers, that were not finite numbers (values summing past ±1.8e308 over a flush interval, a sample rate whose 1/rate is infinite) or would have taken the counter, or the histogram's or summary's _sum, _count or buckets, past them: left out of the Prometheus counters, histograms and summaries, which stay finite; the other outputs show Etsy's sum (Infinity or NaN) for that interval.", true)
	pg.family("statsd_server_prometheus_dropped_total", promCounter,
		"Keys left out of this page at a flush, by reason: collision (another family or key has the name), mapping (the mapping file's action: drop), no_name (the mapping made an empty name).", true)
	pg.family("statsd_server_prometheus_merged_total", promCounter,
		"Keys added at a flush into the series of another key with the same name and labels (counters, histograms).", true)
}

// byBackend adds the counts of one interval to a counter family with a
// backend label; a backend keeps its series once it has one.
func (p *Prometheus) byBackend(pg *page, family, help, prefix string, counts map[string]uint64) {
	for name, n := range counts {
		p.self[prefix+name] += float64(n)
	}
	var names []string
	for id := range p.self {
		if name, ok := strings.CutPrefix(id, prefix); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	f := pg.family(family, promCounter, help, true)
	for _, name := range names {
		f.add(`backend="`+promLabelValue(name)+`"`, p.self[prefix+name])
	}
}

// renderClients writes the loss of the clients that number their
// packets; a client the server forgot is forgotten here too.
func (p *Prometheus) renderClients(pg *page, v *ServerStats) {
	fams := make([]*pageFamily, len(promClient))
	for i, c := range promClient {
		fams[i] = pg.family("statsd_server_client_"+c.name+"_total", promCounter, c.help, true)
	}
	gen := p.gen
	for _, c := range v.Clients {
		t := p.clients[c.ID]
		if t == nil {
			t = &clientTotals{}
			p.clients[c.ID] = t
		}
		t.gen = gen
		t.reordered += c.Reordered
		t.duplicates += c.Duplicates
		t.restarts += c.Restarts
		labels := `client="` + promLabelValue(c.ID) + `"`
		for i, v := range []uint64{c.TotalReceived, c.TotalLost, t.reordered, t.duplicates, t.restarts} {
			fams[i].add(labels, float64(v))
		}
	}
	for id, t := range p.clients {
		if t.gen != gen {
			delete(p.clients, id)
		}
	}
}

// selfPage writes the page's own counts, once the page is resolved.
func (p *Prometheus) selfPage(pg *page) {
	f := pg.families[famID{"statsd_server_prometheus_dropped_total", promCounter, true}]
	for _, r := range dropReasons {
		id := "dropped\x00" + r
		p.self[id] += float64(pg.dropped[r])
		f.add(`reason="`+r+`"`, p.self[id])
	}
	p.self["nonfinite"] += float64(p.nonFinite)
	p.nonFinite = 0
	pg.families[famID{"statsd_server_nonfinite_increments_total", promCounter, true}].add("", p.self["nonfinite"])
	p.self["merged"] += float64(pg.dropped["merged"])
	pg.families[famID{"statsd_server_prometheus_merged_total", promCounter, true}].add("", p.self["merged"])
}
