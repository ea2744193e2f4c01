package statsd

import "sort"

// SelfStats lists the server's own metrics of a flush beyond Etsy's,
// named relative to the stats prefix ("statsd" by default):
//
//	server.flush_duration_ms       the previous flush, backends included
//	server.keys.counters (gauges, timers, sets)
//	server.keys_rejected           values for new keys over MaxKeys
//	server.keys_evicted            idle keys forgotten at MaxKeys (EvictIdleFlushes)
//	server.timer_samples_dropped   over MaxTimerSamples
//	server.set_members_dropped     over MaxSetMembers
//	server.kernel_drops            datagrams the kernel dropped on our sockets
//	server.truncated, server.lines_too_long, server.read_errors
//	server.conns_evicted           TCP connections idle the longest, closed at MaxConns for a new one
//	server.conns_idle_closed       TCP connections closed after IdleTimeout
//	server.repeated, server.repeat_dropped
//	server.backend_errors.<backend>
//	server.backend_lines_lost.<backend>  lines a backend lost (Log, Console)
//	server.seq_lines, server.clients_rejected
//	server.events_ignored, server.service_checks_ignored  DogStatsD events and service checks, counted only
//	server.clients.<id>.packets_received (packets_lost, reordered, duplicates, restarts)
//
// All count the flush interval, except keys (held now).
func (s *Snapshot) SelfStats() []Stat {
	v := &s.Server
	out := []Stat{
		{"server.flush_duration_ms", float64(v.LastFlushDuration.Milliseconds())},
		{"server.keys.counters", float64(v.Keys.Counters)},
		{"server.keys.gauges", float64(v.Keys.Gauges)},
		{"server.keys.timers", float64(v.Keys.Timers)},
		{"server.keys.sets", float64(v.Keys.Sets)},
		{"server.keys_rejected", float64(v.Dropped.Keys)},
		{"server.keys_evicted", float64(v.KeysEvicted)},
		{"server.timer_samples_dropped", float64(v.Dropped.TimerSamples)},
		{"server.set_members_dropped", float64(v.Dropped.SetMembers)},
		{"server.kernel_drops", float64(v.Listen.KernelDrops)},
		{"server.truncated", float64(v.Listen.Truncated)},
		{"server.lines_too_long", float64(v.Listen.LinesTooLong)},
		{"server.read_errors", float64(v.Listen.ReadErrors)},
		{"server.conns_evicted", float64(v.Listen.EvictedConns)},
		{"server.conns_idle_closed", float64(v.Listen.IdleConns)},
		{"server.repeated", float64(v.Listen.Repeated)},
		{"server.repeat_dropped", float64(v.Listen.RepeatDropped)},
		{"server.seq_lines", float64(v.SeqLines)},
		{"server.clients_rejected", float64(v.Dropped.Clients)},
		{"server.events_ignored", float64(v.EventsIgnored)},
		{"server.service_checks_ignored", float64(v.ServiceChecksIgnored)},
	}
	names := make([]string, 0, len(v.BackendErrors))
	for name := range v.BackendErrors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, Stat{"server.backend_errors." + name, float64(v.BackendErrors[name])})
	}
	names = names[:0]
	for name := range v.BackendLinesLost {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, Stat{"server.backend_lines_lost." + name, float64(v.BackendLinesLost[name])})
	}
	for _, c := range v.Clients {
		p := "server.clients." + c.ID + "."
		out = append(out,
			Stat{p + "packets_received", float64(c.Received)},
			Stat{p + "packets_lost", float64(c.Lost)},
			Stat{p + "reordered", float64(c.Reordered)},
			Stat{p + "duplicates", float64(c.Duplicates)},
			Stat{p + "restarts", float64(c.Restarts)})
	}
	return out
}
