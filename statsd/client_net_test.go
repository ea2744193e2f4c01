package statsd

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientTCP accepts connections on 127.0.0.1 and sends what each one
// carried, once closed, on the returned channel.
func clientTCP(t testing.TB) (net.Listener, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	streams := make(chan string, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				b, _ := io.ReadAll(conn)
				streams <- string(b)
			}()
		}
	}()
	return ln, streams
}

func TestClientRoundTrip(t *testing.T) {
	var want strings.Builder
	for i := range 50 {
		fmt.Fprintf(&want, "rt.m%d:%d|c|#k:v\n", i%7, i)
	}
	send := func(c *Client) {
		for i := range 50 {
			c.Count(fmt.Sprintf("m%d", i%7), int64(i), 1, "k:v")
		}
	}
	cfg := ClientConfig{Prefix: "rt.", Shards: 1, MaxPacketSize: 128, FlushInterval: time.Hour, CounterKeys: -1}

	t.Run("tcp", func(t *testing.T) {
		ln, streams := clientTCP(t)
		cfg := cfg
		cfg.Network, cfg.Addr = "tcp", ln.Addr().String()
		c := newTestClient(t, cfg)
		send(c)
		c.Close()
		if got := receiveClientPacket(t, streams); got != want.String() {
			t.Fatalf("stream %q, want %q", got, want.String())
		}
		if st := c.Stats(); st.Packets < 2 || st.Lines != 50 || st.Bytes != uint64(want.Len()) {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("unixgram", func(t *testing.T) {
		srv := clientUnixgram(t)
		packets := collectClientPackets(srv)
		cfg := cfg
		cfg.Network, cfg.Addr = "unixgram", srv.LocalAddr().String()
		c := newTestClient(t, cfg)
		send(c)
		c.Close()
		var got strings.Builder
		for range c.Stats().Packets {
			got.WriteString(receiveClientPacket(t, packets) + "\n")
		}
		if got.String() != want.String() {
			t.Fatalf("datagrams %q, want %q", got.String(), want.String())
		}
	})
}

// After the server drops the connection the client connects again, and
// the lines of the failed writes are counted as dropped. Every increment
// is its own line (CounterKeys -1): the client sums the increments of a
// flush interval otherwise, and how many land in one interval depends on
// scheduling, not on the reconnection.
func TestClientTCPReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := newTestClient(t, ClientConfig{Network: "tcp", Addr: ln.Addr().String(), FlushInterval: 5 * time.Millisecond,
		WriteTimeout: 20 * time.Millisecond, CounterKeys: -1})
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()

	arrived := make(chan struct{}) // closed when the second connection carries a byte
	second := make(chan string, 1) // all it carried, once the client closed it
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			close(second)
			return
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [1]byte
		n, _ := conn.Read(b[:])
		close(arrived)
		rest, _ := io.ReadAll(conn)
		second <- string(b[:n]) + string(rest)
	}()
	deadline := time.After(5 * time.Second)
	increments := uint64(0)
wait:
	for {
		c.Incr("again")
		increments++
		select {
		case <-arrived:
			break wait
		case <-deadline:
			t.Fatalf("no reconnection within 5 s: %+v", c.Stats())
		case <-time.After(5 * time.Millisecond):
		}
	}
	c.Close()
	got := <-second
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	for _, l := range lines {
		if l != "again:1|c" {
			t.Fatalf("second connection got %q: line %q", got, l)
		}
	}
	st := c.Stats()
	if st.WriteErrors == 0 || st.Dropped == 0 {
		t.Fatalf("stats %+v: the failed writes were not counted", st)
	}
	if st.Lines+st.Dropped != increments || uint64(len(lines)) > st.Lines {
		t.Fatalf("stats %+v after %d increments, %d lines received: not every line is written or dropped", st, increments, len(lines))
	}
}

// Many goroutines call every method at once (run with -race): every
// line is written or counted as dropped, nothing arrives twice or torn,
// and the lines of one metric keep their order.
func TestClientConcurrent(t *testing.T) {
	srv := clientUnixgram(t)
	packets := collectClientPackets(srv)
	c := newTestClient(t, ClientConfig{Network: "unixgram", Addr: srv.LocalAddr().String(), Shards: 4, QueueBytes: 16 << 10, CounterKeys: -1})
	const workers, calls = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			g := fmt.Sprintf("g%d", w)
			for i := range calls {
				switch i % 8 {
				case 0:
					c.Incr("hits", "w:x")
				case 1:
					c.Count("bytes", int64(i), 1)
				case 2:
					c.Timing("rt", time.Duration(i)*time.Microsecond, "a", "b")
				case 3:
					c.Histogram("h", float64(i))
				case 4:
					c.Distribution("d", float64(i))
				case 5:
					c.Set("users", g)
				case 6:
					c.GaugeDelta("level", 1)
				case 7:
					c.Gauge(g, float64(i))
				}
			}
		})
	}
	wg.Wait()
	c.Close()
	st := c.Stats()
	if st.Lines+st.Dropped != workers*calls || st.WriteErrors != 0 {
		t.Fatalf("stats %+v: %d lines written or dropped, want %d", st, st.Lines+st.Dropped, workers*calls)
	}
	lines := 0
	last := map[string]int{}
	for range st.Packets {
		for _, l := range strings.Split(receiveClientPacket(t, packets), "\n") {
			lines++
			var w, v int
			if _, err := fmt.Sscanf(l, "g%d:%d|g", &w, &v); err == nil {
				key := fmt.Sprint(w)
				if prev, ok := last[key]; ok && v <= prev {
					t.Fatalf("gauge g%d went from %d to %d: out of order", w, prev, v)
				}
				last[key] = v
			} else if !strings.Contains(l, ":") || !strings.Contains(l, "|") {
				t.Fatalf("torn line %q", l)
			}
		}
	}
	if uint64(lines) != st.Lines {
		t.Fatalf("received %d lines, stats say %d written", lines, st.Lines)
	}
}
