package statsd

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// feed parses lines into a and counts them as one packet.
func feed(t testing.TB, a *Aggregator, lines ...string) {
	t.Helper()
	var p Parser
	nbad := 0
	for _, l := range lines {
		ms, bad, _ := p.AppendLine(nil, []byte(l))
		nbad += bad
		for i := range ms {
			a.Add(&ms[i])
		}
	}
	a.CountPacket(1, len(lines), nbad)
}

// flat renders a snapshot as sorted "kind key[.stat] value" lines, the
// values as Etsy's Graphite backend writes them.
func flat(s *Snapshot) string {
	var out []string
	for _, c := range s.Counters {
		out = append(out, fmt.Sprintf("c %s %s %s", c.Key, jsString(c.Count), jsString(c.Rate)))
	}
	for _, g := range s.Gauges {
		out = append(out, fmt.Sprintf("g %s %s", g.Key, jsString(g.Value)))
	}
	for _, tv := range s.Timers {
		for _, st := range tv.Stats {
			out = append(out, fmt.Sprintf("t %s.%s %s", tv.Key, st.Name, jsString(st.Value)))
		}
	}
	for _, st := range s.Sets {
		out = append(out, fmt.Sprintf("s %s %d", st.Key, st.Count))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func mustAggregator(t testing.TB, cfg AggregatorConfig) *Aggregator {
	t.Helper()
	a, err := NewAggregator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var t0 = time.Unix(1_700_000_000, 0)

func TestAggregatorEtsyArithmetic(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{FlushInterval: 2 * time.Second, PercentThreshold: []float64{90, -10, 50.5}})
	feed(t, a, "c:1|c", "c:2|c|@0.1", "c:x|c", "g:5|g", "g:+2|g", "g:-10|g",
		"t:10|ms", "t:20|ms", "t:30|ms|@0.5", "t:40|ms", "s:a|s", "s:b|s", "s:a|s")
	got := flat(a.Flush(t0))
	want := strings.Join([]string{
		"c c 21 10.5",
		"c statsd.bad_lines_seen 1 0.5",
		"c statsd.metrics_received 13 6.5",
		"c statsd.packets_received 1 0.5",
		"g g -3",
		"s s 2",
		// values 10 20 30 40; count = 1+1+2+1
		"t t.count 5", "t t.count_50_5 2", "t t.count_90 4", "t t.count_top10 0",
		"t t.count_ps 2.5",
		"t t.lower 10", "t t.mean 25", "t t.mean_50_5 15", "t t.mean_90 25", "t t.median 25",
		"t t.std 11.180339887498949", "t t.sum 100", "t t.sum_50_5 30", "t t.sum_90 100",
		"t t.sum_squares 3000", "t t.sum_squares_50_5 500", "t t.sum_squares_90 3000",
		"t t.upper 40", "t t.upper_50_5 20", "t t.upper_90 40",
	}, "\n")
	// round(0.1 × 4) = 0: Etsy skips the -10 threshold's statistics
	// entirely, so count_top10 must not be there either.
	want = strings.Replace(want, "t t.count_top10 0\n", "", 1)
	if got != want {
		t.Errorf("flush 1:\n%s\nwant\n%s", got, want)
	}
	// Idle: counters 0, timers count 0 only, sets 0, gauges kept, and
	// the timestamp lag gauge appears.
	got = flat(a.Flush(t0.Add(2 * time.Second)))
	want = strings.Join([]string{
		"c c 0 0", "c statsd.bad_lines_seen 0 0", "c statsd.metrics_received 0 0", "c statsd.packets_received 0 0",
		"g g -3", "g statsd.timestamp_lag 0", "s s 0", "t t.count 0", "t t.count_ps 0",
	}, "\n")
	if got != want {
		t.Errorf("flush 2:\n%s\nwant\n%s", got, want)
	}
}

func TestAggregatorDeleteIdle(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{FlushInterval: time.Second, DeleteIdleStats: true, GaugesMaxTTL: 2})
	feed(t, a, "c:1|c", "g:5|g", "t:1|ms", "s:a|s", "x.packets_received:1|c")
	a.Flush(t0)
	got := flat(a.Flush(t0.Add(time.Second)))
	want := strings.Join([]string{
		"c statsd.bad_lines_seen 0 0", "c statsd.metrics_received 0 0", "c statsd.packets_received 0 0",
		"c x.packets_received 0 0", "g g 5", "g statsd.timestamp_lag 0",
	}, "\n")
	if got != want {
		t.Errorf("flush 2:\n%s\nwant\n%s", got, want)
	}
	if got := flat(a.Flush(t0.Add(2 * time.Second))); strings.Contains(got, "g g ") {
		t.Errorf("gauge kept past its TTL:\n%s", got)
	}
	if a.keys != 1 { // x.packets_received
		t.Errorf("keys = %d, want 1", a.keys)
	}
}

func TestAggregatorSingleValueTimerAndHistogram(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{FlushInterval: time.Second,
		Histogram:              []HistogramConfig{{Metric: "foo", Bins: nil}, {Metric: "", Bins: []float64{0.5, 2, math.Inf(1)}}},
		CalculatedTimerMetrics: []string{"count", "upper_percent", "histogram"}})
	feed(t, a, "t:1|ms", "foo:1|ms", "u:0.25|ms", "u:1|ms", "u:3|ms")
	got := flat(a.Flush(t0))
	want := strings.Join([]string{
		"t foo.count 1", "t foo.upper_90 1",
		"t t.count 1", "t t.histogram.bin_0_5 0", "t t.histogram.bin_2 1", "t t.histogram.bin_inf 0", "t t.upper_90 1",
		"t u.count 3", "t u.histogram.bin_0_5 1", "t u.histogram.bin_2 1", "t u.histogram.bin_inf 1", "t u.upper_90 3",
	}, "\n")
	if !strings.HasSuffix(got, want) {
		t.Errorf("got\n%s\nwant (timers)\n%s", got, want)
	}
}

func TestAggregatorKeyCap(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{MaxKeys: 10})
	for i := range 25 {
		feed(t, a, fmt.Sprintf("k%d:1|c", i))
	}
	feed(t, a, "k0:1|c") // an existing key is still taken
	s := a.Flush(t0)
	if d := s.Server.Dropped.Keys; d != 15 {
		t.Errorf("dropped %d keys, want 15", d)
	}
	if n := len(s.Counters); n != 13 {
		t.Errorf("%d counters, want 10 and Etsy's 3", n)
	}
}

// A flood of one-off keys fills the key cap; once they have been idle
// for EvictIdleFlushes intervals a flush evicts them and new keys are
// taken again, while keys that keep receiving values are never evicted.
func TestAggregatorEvictsIdleKeysAtCap(t *testing.T) {
	const maxKeys, idle = 40, 3
	a := mustAggregator(t, AggregatorConfig{FlushInterval: time.Second, MaxKeys: maxKeys, EvictIdleFlushes: idle})
	live := []string{"live.c:1|c", "live.g:7|g", "live.t:5|ms", "live.s:u|s"}
	const slow = "live.slow:1|c" // a value every idle-1 intervals: never idle long enough
	feed(t, a, append(live, slow)...)
	for i := 0; a.keys < maxKeys; i++ {
		feed(t, a, fmt.Sprintf("junk.c%d:1|c", i), fmt.Sprintf("junk.g%d:1|g", i), fmt.Sprintf("junk.t%d:1|ms", i), fmt.Sprintf("junk.s%d:x|s", i))
	}
	junk := maxKeys - len(live) - 1
	var p Parser
	legit, _, _ := p.AppendLine(nil, []byte("new.key:1|c"))
	if a.Add(&legit[0]) {
		t.Fatal("a new key was taken at the cap")
	}
	for flush := 1; ; flush++ {
		s := a.Flush(t0.Add(time.Duration(flush) * time.Second))
		got := flat(s)
		for _, want := range []string{"c live.c 1 1", "g live.g 7", "t live.t.count 1", "s live.s 1"} {
			if !strings.Contains(got, want+"\n") {
				t.Fatalf("flush %d: live key %q missing:\n%s", flush, want, got)
			}
		}
		if !strings.Contains(got, "c live.slow ") {
			t.Fatalf("flush %d: live.slow evicted", flush)
		}
		if flush <= idle {
			if s.Server.KeysEvicted != 0 || a.Add(&legit[0]) {
				t.Fatalf("flush %d: evicted %d keys idle for %d intervals, want none before %d", flush, s.Server.KeysEvicted, flush-1, idle)
			}
		} else {
			if s.Server.KeysEvicted != uint64(junk) || strings.Contains(got, "junk.") {
				t.Fatalf("flush %d: evicted %d keys, want the %d junk ones:\n%s", flush, s.Server.KeysEvicted, junk, got)
			}
			if !selfStat(s, "server.keys_evicted", float64(junk)) {
				t.Fatalf("flush %d: self-metrics %v lack server.keys_evicted %d", flush, s.SelfStats(), junk)
			}
			if !a.Add(&legit[0]) {
				t.Fatalf("flush %d: the new key is still refused after the eviction", flush)
			}
			break
		}
		feed(t, a, live...)
		if flush%(idle-1) == 0 {
			feed(t, a, slow)
		}
	}
	if s := a.Flush(t0.Add(time.Hour)); s.Server.KeysEvicted != 0 || !strings.Contains(flat(s), "c new.key 1 1") {
		t.Fatalf("after the eviction: %d evicted, flush\n%s", s.Server.KeysEvicted, flat(s))
	}
}

// Below the cap, and with EvictIdleFlushes -1, idle keys stay (Etsy's
// behaviour): counters keep flushing 0.
func TestAggregatorKeepsIdleKeys(t *testing.T) {
	for _, cfg := range []AggregatorConfig{{MaxKeys: 3, EvictIdleFlushes: 1}, {MaxKeys: 2, EvictIdleFlushes: -1}} {
		a := mustAggregator(t, cfg)
		feed(t, a, "a:1|c", "b:1|g")
		for flush := range 10 {
			s := a.Flush(t0.Add(time.Duration(flush) * time.Second))
			if got := flat(s); s.Server.KeysEvicted != 0 || !strings.Contains(got, "c a ") || !strings.Contains(got, "g b 1") {
				t.Fatalf("%+v, flush %d: %d evicted:\n%s", cfg, flush, s.Server.KeysEvicted, got)
			}
		}
	}
}

func selfStat(s *Snapshot, name string, want float64) bool {
	for _, st := range s.SelfStats() {
		if st.Name == name {
			return st.Value == want
		}
	}
	return false
}

func TestSeqTracker(t *testing.T) {
	tr := seqTracker{max: 2, idleFlushes: 2}
	for _, seq := range []uint64{10, 11, 13, 12, 12, 15, 90, 200} {
		tr.observe([]byte("c1"), seq)
	}
	if tr.observe([]byte("c2"), 1); tr.observe([]byte("c3"), 1) {
		t.Error("a third client was taken")
	}
	_, got := tr.flush()
	// Missing: 14, 16..89 and 91..199; of those 137..199 are still in
	// the window behind 200, pending.
	c1 := got[0]
	if c1.ID != "c1" || c1.Received != 7 || c1.Reordered != 1 || c1.Duplicates != 1 || c1.Lost != 1+74+109-63 {
		t.Errorf("c1 = %+v", c1)
	}
	tr.observe([]byte("c1"), 3) // back past the window: a restart
	tr.observe([]byte("c1"), 4)
	_, got = tr.flush()
	if c1 := got[0]; c1.Restarts != 1 || c1.Received != 2 || c1.Lost != 0 || c1.TotalReceived != 9 {
		t.Errorf("after restart: %+v", c1)
	}
	tr.observe([]byte("c1"), 6)
	tr.flush()
	tr.flush()
	_, got = tr.flush() // c1 idle two flushes: 5 is lost, c1 forgotten (c2 was already)
	if len(got) != 1 || got[0].Lost != 1 || len(tr.clients) != 0 {
		t.Errorf("expiry: %+v, %d clients left", got, len(tr.clients))
	}
}

// TestAggregatorSnapshotValues: a snapshot's timer values are the
// interval's, sorted, with the scaled count and the type, and stay
// intact while the next interval receives values (a backend reads them
// after the aggregator's lock is released).
func TestAggregatorSnapshotValues(t *testing.T) {
	a := mustAggregator(t, AggregatorConfig{})
	feed(t, a, "rt:3|ms", "rt:1|ms|@0.5", "rt:2|ms", "h:5|h")
	s1 := a.Flush(time.Unix(1700000000, 0))
	feed(t, a, "rt:9|ms", "rt:8|ms", "rt:7|ms", "rt:6|ms")
	var rt, h *TimerValue
	for i := range s1.Timers {
		switch s1.Timers[i].Key {
		case "rt":
			rt = &s1.Timers[i]
		case "h":
			h = &s1.Timers[i]
		}
	}
	if rt == nil || fmt.Sprint(rt.Values) != "[1 2 3]" || rt.Count != 4 || rt.Type != Timer {
		t.Fatalf("rt after the next interval's values: %+v", rt)
	}
	if h == nil || h.Type != Histogram {
		t.Fatalf("h: %+v", h)
	}
	s2 := a.Flush(time.Unix(1700000010, 0))
	for _, tv := range s2.Timers {
		if tv.Key == "rt" && fmt.Sprint(tv.Values) != "[6 7 8 9]" {
			t.Errorf("second flush: rt values %v", tv.Values)
		}
	}
}

// TestAggregatorSetMemoryReturned: a set's members are forgotten at each
// flush, and so is the memory a burst of them took: sets that each once
// held many members, now idle, hold about what idle sets hold (Go maps
// keep their size when cleared).
func TestAggregatorSetMemoryReturned(t *testing.T) {
	const sets, burst = 40, 20_000
	a := mustAggregator(t, AggregatorConfig{})
	member := make([]byte, 0, 16)
	add := func(set, n int) {
		key := []byte(fmt.Sprintf("s%d", set))
		for j := range n {
			member = strconv.AppendInt(member[:0], int64(j), 10)
			a.Add(&Metric{Key: key, Type: Set, Member: member})
		}
	}
	for i := range sets {
		add(i, 1)
	}
	a.Flush(t0)
	a.Flush(t0)
	idle := heapAlloc()
	for i := range sets {
		add(i, burst) // one set after the other, each for one interval
		a.Flush(t0)
	}
	snap := a.Flush(t0)
	if len(snap.Sets) != sets {
		t.Fatalf("%d sets, want %d", len(snap.Sets), sets)
	}
	if grew := heapAlloc() - idle; grew > 2<<20 {
		t.Errorf("idle sets hold %d bytes more after a burst of %d members each", grew, burst)
	}
	runtime.KeepAlive(a)
}

// TestAggregatorSetMemberBytes: a set holds a bounded number of bytes
// per member whatever the members' length (up to a datagram or a TCP
// line each), and still counts exactly the distinct members: long ones
// that differ only in their last byte are two, one sent twice is one.
func TestAggregatorSetMemberBytes(t *testing.T) {
	const members, size = 200, 60_000
	a := mustAggregator(t, AggregatorConfig{})
	member := []byte(strings.Repeat("m", size))
	add := func(key string, m []byte) { a.Add(&Metric{Key: []byte(key), Type: Set, Member: m}) }
	add("big", []byte("short"))
	before := heapAlloc()
	for i := range members {
		copy(member[size-8:], fmt.Sprintf("%08d", i))
		add("big", member)
		add("big", member)
	}
	grew := heapAlloc() - before
	for _, m := range []string{"", "x", strings.Repeat("y", 31), strings.Repeat("y", 32), strings.Repeat("y", 33)} {
		add("lengths", []byte(m))
		add("lengths", []byte(m))
	}
	// A member made of a long one's digest is another member.
	digest := sha256.Sum256(member)
	add("crafted", member)
	add("crafted", digest[:])
	counts := map[string]int{}
	for _, s := range a.Flush(t0).Sets {
		counts[s.Key] = s.Count
	}
	if counts["big"] != members+1 || counts["lengths"] != 5 || counts["crafted"] != 2 {
		t.Errorf("counts %v, want big %d, lengths 5, crafted 2", counts, members+1)
	}
	if grew > 1<<20 {
		t.Errorf("%d members of %d bytes took %d bytes", members, size, grew)
	}
}

// heapAlloc returns the bytes of the heap in use after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestAggregatorOwnGaugeKeepsKeyCount: a client's gauge named as the
// server's own (statsd.timestamp_lag) takes a TTL under DeleteGauges,
// as at Etsy, and is deleted when it runs out; the own gauge was never
// counted against MaxKeys, so its deletion must not uncount a key, or
// every such cycle lets one more key past MaxKeys.
func TestAggregatorOwnGaugeKeepsKeyCount(t *testing.T) {
	const maxKeys = 3
	a := mustAggregator(t, AggregatorConfig{DeleteIdleStats: true, MaxKeys: maxKeys})
	now := time.Unix(1700000000, 0)
	for range 10 {
		a.Flush(now) // the second flush makes statsd.timestamp_lag
		feed(t, a, "statsd.timestamp_lag:1|g")
		now = now.Add(10 * time.Second)
		a.Flush(now) // its TTL runs out: deleted
		now = now.Add(10 * time.Second)
	}
	var lines []string
	for i := range maxKeys + 5 {
		lines = append(lines, fmt.Sprintf("k%d:1|c", i))
	}
	feed(t, a, lines...)
	s := a.Flush(now)
	users := 0
	for _, c := range s.Counters {
		if !c.Own {
			users++
		}
	}
	if users != maxKeys || s.Server.Dropped.Keys != 5 {
		t.Errorf("%d counters kept, %d dropped; want MaxKeys %d kept, 5 dropped", users, s.Server.Dropped.Keys, maxKeys)
	}
}

// TestAggregatorKeyCount: over seeded random values and flushes, with
// the server's own names among the keys and every deletion and eviction
// setting, the keys counted against MaxKeys are exactly the entries that
// are not the server's own.
func TestAggregatorKeyCount(t *testing.T) {
	names := []string{"a", "b", "c", "statsd.timestamp_lag", "statsd.bad_lines_seen", "x.packets_received", "statsd.packets_received"}
	types := []string{"c", "g", "ms", "s"}
	for seed := range 200 {
		r := rand.New(rand.NewPCG(uint64(seed), 9))
		cfg := AggregatorConfig{MaxKeys: 1 + r.IntN(6), EvictIdleFlushes: []int{-1, 1, 2}[r.IntN(3)]}
		if r.IntN(2) == 0 {
			cfg.DeleteIdleStats = true
		} else {
			cfg.DeleteGauges, cfg.DeleteCounters, cfg.GaugesMaxTTL = r.IntN(2) == 0, r.IntN(2) == 0, 1+r.IntN(2)
		}
		a := mustAggregator(t, cfg)
		now := time.Unix(1700000000, 0)
		for step := range 60 {
			if r.IntN(4) == 0 {
				now = now.Add(10 * time.Second)
				a.Flush(now)
			} else {
				feed(t, a, fmt.Sprintf("%s:%d|%s", names[r.IntN(len(names))], r.IntN(3), types[r.IntN(len(types))]))
			}
			n := len(a.timers) + len(a.sets)
			for _, c := range a.counters {
				if !c.own {
					n++
				}
			}
			for _, g := range a.gauges {
				if !g.own {
					n++
				}
			}
			if n != a.keys {
				t.Fatalf("seed %d, step %d (%+v): %d keys counted, %d held", seed, step, cfg, a.keys, n)
			}
		}
	}
}
