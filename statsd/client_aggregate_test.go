package statsd

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Increments from many goroutines are summed exactly: each flush sends
// one line per counter, and the lines add up to every increment.
func TestClientAggregatesCounters(t *testing.T) {
	srv := clientUnixgram(t)
	packets := collectClientPackets(srv)
	c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Prefix: "p.",
		FlushInterval: time.Millisecond, QueueBytes: 1 << 20})
	const workers, calls = 4, 5000
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range calls {
				c.Incr("a")
				c.Count("b", 2, 1, "k:v")
				c.Incr("a", "k:v")
				c.Count("a", int64(i%3)-1, 1) // -1, 0, 1: sums to 0 over each 3 calls
				c.Gauge("g", float64(i))
			}
		})
	}
	wg.Wait()
	c.Close()
	st := c.Stats()
	if st.Dropped != 0 || st.WriteErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	sums, counterLines := map[string]int64{}, 0
	for range st.Packets {
		for _, l := range strings.Split(receiveClientPacket(t, packets), "\n") {
			var n int64
			name, rest, _ := strings.Cut(l, ":")
			value, tags, _ := strings.Cut(rest, "|c")
			if strings.Contains(rest, "|g") {
				continue
			}
			if _, err := fmt.Sscan(value, &n); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			sums[name+tags] += n
			counterLines++
		}
	}
	want := map[string]int64{"p.a": workers * calls, "p.b|#k:v": workers * calls * 2, "p.a|#k:v": workers * calls}
	for i := range calls {
		want["p.a"] += workers * (int64(i%3) - 1)
	}
	for k, v := range want {
		if sums[k] != v {
			t.Errorf("%s summed to %d, want %d (all: %v)", k, sums[k], v, sums)
		}
	}
	if counterLines >= workers*calls {
		t.Fatalf("%d lines for %d increments: not aggregated", counterLines, workers*calls*4)
	}
}

// A counter that finds no slot is sent line by line; a flush sends only
// the counters incremented since the last one.
func TestClientAggregationBounded(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Shards: 1, CounterKeys: 1, FlushInterval: time.Hour})
	flush := func() { // what the sender goroutine does every FlushInterval
		c.flushTallies()
		c.flushShards(false)
	}
	for range 3 {
		c.Incr("a")
		c.Incr("b")
	}
	flush()
	if got := readClientPacket(t, srv); got != "b:1|c\nb:1|c\nb:1|c\na:3|c" {
		t.Fatalf("got %q", got)
	}
	c.Set("s", "x")
	flush()
	if got := readClientPacket(t, srv); got != "s:x|s" {
		t.Fatalf("got %q: an idle counter was sent", got)
	}
}

// An increment that lands in its counter after Close's last flush of the
// counters (its caller passed every check before Close began) is not
// lost silently: it is emitted as a line, which the closed client drops
// and counts. Such an increment runs the same code as one made after
// Close, which this test makes.
func TestClientIncrementAfterCloseCounted(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Shards: 1, FlushInterval: time.Hour})
	c.Incr("a", "k:v") // claims its slot
	c.Close()
	if got := readClientPacket(t, srv); got != "a:1|c|#k:v" {
		t.Fatalf("got %q", got)
	}
	c.Incr("a", "k:v")
	c.Count("a", 2, 1, "k:v")
	c.Incr("new")
	if st := c.Stats(); st.Dropped != 3 || st.Lines != 1 {
		t.Fatalf("stats %+v, want 3 lines dropped after Close", st)
	}
	for i := range c.tallies.slots {
		if k := c.tallies.slots[i].key.Load(); k != nil {
			if n := k.n.Load(); n != 0 {
				t.Fatalf("a counter holds %d after Close, never to be sent or counted", n)
			}
		}
	}
}

// Counters idle for clientTallyIdleFlushes flushes give their slots up:
// names that come and go do not fill the table for good, leaving every
// later counter to be sent line by line.
func TestClientIdleCountersGiveUpSlots(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Shards: 1, CounterKeys: 8, FlushInterval: time.Hour})
	flush := func() { // what the sender goroutine does every FlushInterval
		c.flushTallies()
		c.flushShards(false)
	}
	var first []string
	for i := range 8 {
		c.Incr(fmt.Sprint("old.", i))
		first = append(first, fmt.Sprint("old.", i, ":1|c"))
	}
	c.Incr("new") // no slot left
	flush()
	got := strings.Split(readClientPacket(t, srv), "\n")
	slices.Sort(got)
	if want := append([]string{"new:1|c"}, first...); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for range clientTallyIdleFlushes {
		flush()
	}
	for range 100 {
		c.Incr("new")
	}
	flush()
	if got := readClientPacket(t, srv); got != "new:100|c" {
		t.Fatalf("got %q: the idle counters kept their slots", got)
	}
}

// An increment that found its counter just before the flush evicted it
// lands in a counter that no flush will visit again: the increment sends
// it itself.
func TestClientIncrementOfEvictedCounter(t *testing.T) {
	srv := clientUDP(t)
	c := newTestClient(t, ClientConfig{Addr: srv.LocalAddr().String(), Shards: 1, FlushInterval: time.Hour})
	flush := func() {
		c.flushTallies()
		c.flushShards(false)
	}
	c.Incr("a")
	s, k := c.tallies.find(c.seed, "a", nil) // a later increment finds its counter...
	flush()
	if got := readClientPacket(t, srv); got != "a:1|c" {
		t.Fatalf("got %q", got)
	}
	for range clientTallyIdleFlushes { // ...which the flushes evict...
		flush()
	}
	if s.key.Load() != nil {
		t.Fatal("idle counter not evicted")
	}
	c.addTally(s, k, 5) // ...before the increment adds to it
	flush()
	if got := readClientPacket(t, srv); got != "a:5|c" {
		t.Fatalf("got %q", got)
	}
	c.Close()
	if st := c.Stats(); st.Lines != 2 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A flush needs more packets than are free: the sender writes queued
// packets to make room rather than drop lines while the network is
// idle. Each client here has one packet more than its shards.
func TestClientFlushMakesRoom(t *testing.T) {
	t.Run("counters", func(t *testing.T) {
		srv := clientUnixgram(t)
		c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Shards: 1,
			MaxPacketSize: 128, QueueBytes: 128, FlushInterval: time.Hour})
		var lines []string
		for i := range 30 {
			name := fmt.Sprintf("counter.with.a.long.name.%02d", i)
			c.Incr(name)
			lines = append(lines, name+":1|c")
		}
		checkClientFlushed(t, c, srv, lines)
	})
	t.Run("shards", func(t *testing.T) {
		srv := clientUnixgram(t)
		const shards = 4
		c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Shards: shards,
			MaxPacketSize: 1024, QueueBytes: 1024, FlushInterval: time.Hour, CounterKeys: -1})
		var lines []string
		used := map[*clientShard]bool{}
		for i := 0; len(used) < shards; i++ {
			name := fmt.Sprintf("name.%d", i)
			if s := c.shard(name); !used[s] {
				used[s] = true
				c.Incr(name)
				lines = append(lines, name+":1|c")
			}
		}
		checkClientFlushed(t, c, srv, lines)
	})
}

// checkClientFlushed closes c and checks that srv received every one of
// lines, and nothing else.
func checkClientFlushed(t *testing.T, c *Client, srv net.Conn, lines []string) {
	t.Helper()
	packets := collectClientPackets(srv)
	c.Close()
	st := c.Stats()
	if st.Dropped != 0 || st.Lines != uint64(len(lines)) {
		t.Fatalf("stats %+v, want %d lines and none dropped", st, len(lines))
	}
	want := map[string]bool{}
	for _, l := range lines {
		want[l] = true
	}
	for range st.Packets {
		for _, l := range strings.Split(receiveClientPacket(t, packets), "\n") {
			if !want[l] {
				t.Fatalf("unexpected line %q", l)
			}
			delete(want, l)
		}
	}
	if len(want) != 0 {
		t.Fatalf("lines not received: %v", want)
	}
}

// Counters evicted and claimed again while increments race with the
// flushes: every increment is sent once, under its own name.
func TestClientEvictionRaces(t *testing.T) {
	srv := clientUnixgram(t)
	packets := collectClientPackets(srv)
	c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(),
		FlushInterval: 200 * time.Microsecond, QueueBytes: 4 << 20, CounterKeys: 64})
	const workers, bursts, names = 4, 300, 96
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for b := range bursts {
				name := fmt.Sprint("n", (b*7+w)%names)
				for range 20 {
					c.Incr(name)
				}
				time.Sleep(50 * time.Microsecond) // let flushes pass, so counters go idle
			}
		})
	}
	wg.Wait()
	c.Close()
	st := c.Stats()
	if st.Dropped != 0 || st.WriteErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	want := map[string]int64{}
	for w := range workers {
		for b := range bursts {
			want[fmt.Sprint("n", (b*7+w)%names)] += 20
		}
	}
	got := map[string]int64{}
	for range st.Packets {
		for _, l := range strings.Split(receiveClientPacket(t, packets), "\n") {
			name, rest, _ := strings.Cut(l, ":")
			var n int64
			if _, err := fmt.Sscanf(rest, "%d|c", &n); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			got[name] += n
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("sums %v, want %v", got, want)
	}
}
